package docker

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/hermes-box/boxes/engine"
)

// Exec runs a command in container id and returns its exit code once its
// output has ended, or the cause of ctx's end should ctx end first. An
// engine gone before or while the command runs is engine.ErrUnreachable.
func (e *Engine) Exec(ctx context.Context, id string, o engine.ExecOptions) (int, error) {
	code, err := e.exec(ctx, id, o)
	return code, e.lost(err)
}

func (e *Engine) exec(ctx context.Context, id string, o engine.ExecOptions) (int, error) {
	created, err := e.api.ContainerExecCreate(ctx, id, container.ExecOptions{
		User:         o.User,
		WorkingDir:   o.WorkDir,
		Env:          o.Env,
		Cmd:          o.Cmd,
		Tty:          o.TTY,
		AttachStdin:  o.Stdin != nil,
		AttachStdout: true,
		AttachStderr: true,
	})
	if err != nil {
		return -1, fmt.Errorf("exec in %s: %w", id[:min(12, len(id))], err)
	}
	att, err := e.api.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{Tty: o.TTY})
	if err != nil {
		return -1, err
	}
	defer att.Close()
	// The engine's stream of the command's output outlives ctx unless it
	// is closed: a cancel (Ctrl-C, a timeout) ends the wait for it, as
	// it ends the wait for an engine that never ends the stream (20.10
	// can miss the exit of an exec's process). The command itself goes on
	// in the box, as it does after docker exec is interrupted.
	defer context.AfterFunc(ctx, func() { att.Close() })()
	if o.Started != nil && o.TTY {
		o.Started(func(h, w uint) {
			_ = e.api.ContainerExecResize(ctx, created.ID, container.ResizeOptions{Height: h, Width: w})
		})
	}
	if o.Stdin != nil {
		go func() {
			_, _ = io.Copy(att.Conn, o.Stdin)
			_ = att.CloseWrite()
		}()
	}
	stdout, stderr := orDiscard(o.Stdout), orDiscard(o.Stderr)
	if o.TTY {
		_, err = io.Copy(stdout, att.Reader)
	} else {
		_, err = stdcopy.StdCopy(stdout, stderr, att.Reader)
	}
	// Closed by the cancel, the stream fails; one that ended first is the
	// command's end, whose exit code stands.
	if err != nil && ctx.Err() != nil {
		return -1, fmt.Errorf("exec in %s: %w", id[:min(12, len(id))], context.Cause(ctx))
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return -1, err
	}
	inspect, err := e.api.ContainerExecInspect(context.WithoutCancel(ctx), created.ID)
	if err != nil {
		return -1, err
	}
	return inspect.ExitCode, nil
}

// Logs copies container id's logs to stdout and stderr, following them
// until ctx ends when asked to.
func (e *Engine) Logs(ctx context.Context, id string, o engine.LogOptions, stdout, stderr io.Writer) error {
	rc, err := e.api.ContainerLogs(ctx, id, container.LogsOptions{
		ShowStdout: true, ShowStderr: true, Follow: o.Follow, Tail: o.Tail, Timestamps: o.Timestamps,
	})
	if err != nil {
		return err
	}
	defer rc.Close()
	if _, err := stdcopy.StdCopy(orDiscard(stdout), orDiscard(stderr), rc); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// CopyFrom streams path of container id out as a tar (entries named after
// path's last element: "data", "data/…" for /data). The container may be
// stopped.
func (e *Engine) CopyFrom(ctx context.Context, id, path string) (io.ReadCloser, error) {
	rc, _, err := e.api.CopyFromContainer(ctx, id, path)
	if err != nil {
		return nil, e.lost(fmt.Errorf("copying %s out of the container: %w", path, err))
	}
	return rc, nil
}

// CopyTo unpacks the tar stream content at dir in container id, keeping
// the owners the tar names (CopyUIDGID would chown everything to the
// container's user instead). The container may be created and not
// started: its volumes are mounted for the copy.
func (e *Engine) CopyTo(ctx context.Context, id, dir string, content io.Reader) error {
	if err := e.api.CopyToContainer(ctx, id, dir, content, container.CopyToContainerOptions{}); err != nil {
		return e.lost(fmt.Errorf("copying into the container at %s: %w", dir, err))
	}
	return nil
}

// Run runs cmd as user in container id, without input or terminal, and
// returns its exit code: the small exec the guest contract (package hb) needs.
func (e *Engine) Run(ctx context.Context, id, user string, cmd []string, stdout, stderr io.Writer) (int, error) {
	return e.Exec(ctx, id, engine.ExecOptions{Cmd: cmd, User: user, Stdout: stdout, Stderr: stderr})
}

// StillRunning reports whether container id is still there and running:
// false once it was stopped, removed or replaced.
func (e *Engine) StillRunning(ctx context.Context, id string) (bool, error) {
	c, err := e.api.ContainerInspect(ctx, id)
	if IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return c.State != nil && c.State.Running && !c.State.Restarting, nil
}
