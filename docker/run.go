package docker

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/hb"
)

// ToolVersions runs `hb versions --json` in a throwaway container of image
// and returns tool → version for the tools it found.
func (e *Engine) ToolVersions(ctx context.Context, image string) (map[string]string, error) {
	out, err := e.runOnce(ctx, image, hb.VersionsCmd)
	if err != nil {
		return nil, err
	}
	return hb.ParseVersions(out)
}

// runOnce runs cmd in a new container of image (no network) and returns
// its stdout. The engine removes the container once it ends (AutoRemove),
// so a boxes killed meanwhile leaves nothing behind; its output is read
// through an attach made before the start, and its exit code from a wait
// for its removal, as docker run --rm does.
func (e *Engine) runOnce(ctx context.Context, image string, cmd []string) ([]byte, error) {
	e.removeStaleOneOffs(ctx)
	created, err := e.api.ContainerCreate(ctx,
		&container.Config{Image: image, Entrypoint: cmd, Labels: map[string]string{oneOffLabel: "1"}, AttachStdout: true, AttachStderr: true},
		&container.HostConfig{NetworkMode: "none", AutoRemove: true}, nil, nil, "")
	if err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started { // a container never started is not removed by the engine
			_ = e.api.ContainerRemove(context.WithoutCancel(ctx), created.ID, container.RemoveOptions{Force: true})
		}
	}()
	att, err := e.api.ContainerAttach(ctx, created.ID, container.AttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		return nil, err
	}
	defer att.Close()
	defer context.AfterFunc(ctx, func() { att.Close() })()
	waitC, errC := e.api.ContainerWait(ctx, created.ID, container.WaitConditionRemoved)
	if err := e.api.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return nil, err
	}
	started = true
	var out, errb bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &errb, att.Reader); err != nil && ctx.Err() == nil {
		return nil, err
	}
	var code int64
	select {
	case w := <-waitC:
		if w.Error != nil && w.Error.Message != "" {
			return nil, fmt.Errorf("%v: the engine's wait for its end: %s", cmd, w.Error.Message)
		}
		code = w.StatusCode
	case err := <-errC:
		return nil, err
	}
	if code != 0 {
		return nil, fmt.Errorf("%v exited %d: %s", cmd, code, bytes.TrimSpace(errb.Bytes()))
	}
	return out.Bytes(), nil
}

// removeStaleOneOffs removes what a boxes killed between runOnce's create
// and its start left: throwaway containers never started (the engine's
// AutoRemove removes only those that ran), older than staleMeasure, so
// that another command's about to start is left alone. Room measures have
// their own rule (removeRoomMeasures). It is best effort: a failure here
// is no reason to fail the run.
func (e *Engine) removeStaleOneOffs(ctx context.Context) {
	_ = e.sweepOneOffs(ctx, filters.Arg("status", "created"), func(c container.Summary) bool {
		_, room := c.Labels[roomLabel]
		return !room && stale(c)
	})
}

// sweepOneOffs removes, with their anonymous volumes, the throwaway
// containers that also match also and that left says a killed command
// left; one already gone, or being removed, is no matter.
func (e *Engine) sweepOneOffs(ctx context.Context, also filters.KeyValuePair, left func(container.Summary) bool) error {
	list, err := e.api.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", oneOffLabel), also)})
	if err != nil {
		return err
	}
	for _, c := range list {
		if !left(c) {
			continue
		}
		err := ignoreNotFound(e.api.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}))
		if err != nil && !removalUnderway(err) {
			return err
		}
	}
	return nil
}

// stale reports whether throwaway container c is older than staleMeasure.
func stale(c container.Summary) bool { return time.Since(time.Unix(c.Created, 0)) >= staleMeasure }

// runCreated starts the created throwaway container id, waits for it to end
// and returns its stdout; cmd names it in errors.
func (e *Engine) runCreated(ctx context.Context, id string, cmd []string) ([]byte, error) {
	stdout, stderr, code, err := e.runToEnd(ctx, id)
	if err == nil && code != 0 {
		err = fmt.Errorf("%v exited %d: %s", cmd, code, stderr)
	}
	return stdout, err
}

// runToEnd starts the created throwaway container id and waits for it to
// end: what it printed on stdout and stderr (trimmed), and its exit code.
func (e *Engine) runToEnd(ctx context.Context, id string) (stdout []byte, stderr string, code int, err error) {
	if err := e.api.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return nil, "", 0, err
	}
	waitC, errC := e.api.ContainerWait(ctx, id, container.WaitConditionNotRunning)
	select {
	case w := <-waitC:
		code = int(w.StatusCode)
	case err := <-errC:
		return nil, "", 0, err
	}
	logs, err := e.api.ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return nil, "", 0, err
	}
	defer logs.Close()
	var out, errb bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &errb, logs); err != nil {
		return nil, "", 0, err
	}
	return out.Bytes(), string(bytes.TrimSpace(errb.Bytes())), code, nil
}

// VolumeRoom is the room left, in bytes, in the engine's store of local
// volumes, where compose makes every box's volumes (it gives them no
// driver): a throwaway container of image measures it on a fresh anonymous
// volume, and both are removed after. It runs beside box's create, under
// box's lock, and is labelled with box: a measure a killed command left
// is removed by the next one of the same box, or by any once it is old.
func (e *Engine) VolumeRoom(ctx context.Context, image, box string) (int64, error) {
	if err := e.removeRoomMeasures(ctx, box); err != nil {
		return 0, err
	}
	const path = "/room"
	cmd := []string{"stat", "-f", "-c", "%a %S", path}
	created, err := e.api.ContainerCreate(ctx,
		&container.Config{Image: image, Entrypoint: cmd, Volumes: map[string]struct{}{path: {}},
			Labels: map[string]string{oneOffLabel: "1", roomLabel: box}},
		&container.HostConfig{NetworkMode: "none"}, nil, nil, "")
	if err != nil {
		return 0, err
	}
	defer e.api.ContainerRemove(context.WithoutCancel(ctx), created.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
	out, err := e.runCreated(ctx, created.ID, cmd)
	if err != nil {
		return 0, err
	}
	var blocks, size int64
	if _, err := fmt.Sscanf(string(out), "%d %d", &blocks, &size); err != nil {
		return 0, fmt.Errorf("stat -f %s: %q: %w", path, out, err)
	}
	return blocks * size, nil
}

// roomLabel marks VolumeRoom's throwaway containers with the box whose
// restore they measure for.
const roomLabel = compose.RoomLabel

// staleMeasure is the age past which a throwaway container (a room
// measure, a run never started) is one a killed command left: each takes
// seconds.
const staleMeasure = 10 * time.Minute

// removeRoomMeasures removes the throwaway containers, and their anonymous
// volumes, that VolumeRoom left when it was killed: box's, and any other
// box's older than staleMeasure (a measure takes a second).
func (e *Engine) removeRoomMeasures(ctx context.Context, box string) error {
	return e.sweepOneOffs(ctx, filters.Arg("label", roomLabel), func(c container.Summary) bool {
		return c.Labels[roomLabel] == box || stale(c)
	})
}

// removalUnderway reports whether err is the engine's refusal to remove a
// container it is removing already: the engine goes on with a removal whose
// client went away, so a measure an interrupted command was removing may
// still be going when the next command sweeps, and is gone soon after.
func removalUnderway(err error) bool {
	return cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "already in progress")
}

// oneOffLabel marks the throwaway containers boxes runs and removes after.
const oneOffLabel = compose.OneOffLabel

// removeOneOffs removes the throwaway containers that mount volume. Those
// on a box's volumes run under the box's lock, so any found by a command
// holding it were left by one that was killed before it could remove them
// (a snapshot's or a fork's helper, say): they would hold the volume, and
// no plan sees them.
func (e *Engine) removeOneOffs(ctx context.Context, volume string) error {
	list, err := e.api.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", oneOffLabel), filters.Arg("volume", volume))})
	if err != nil {
		return err
	}
	for _, c := range list {
		if err := ignoreNotFound(e.api.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})); err != nil {
			return err
		}
	}
	return nil
}
