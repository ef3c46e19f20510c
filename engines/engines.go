// Package engines opens a workspace whose hosts are Docker engines: it
// connects them on first use, tells them apart, thaws the boxes a dead save
// left frozen, brings the image to those that lack it, wires moves between
// them, and finds how this machine reaches a box's dashboard.
package engines

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/workspace"
)

// errNotDocker is an engine of a workspace that is not a Docker engine.
var errNotDocker = errors.New("not a Docker engine")

// Open reads boxes.yaml at file and boxes.lock beside it; each host's
// Docker engine is reached on first use, with opts. shown names files in
// messages and warn receives warnings (see workspace.Options).
func Open(file string, opts docker.Options, shown func(string) string, warn func(format string, args ...any)) (*workspace.Workspace, error) {
	return workspace.Open(file, workspace.Options{
		Connect: func(ctx context.Context, h spec.Host) (workspace.Engine, error) {
			return docker.Connect(ctx, h, opts)
		},
		Shown: shown,
		Warn:  warn,
		Distinct: func(engines []workspace.Engine) error {
			all := make([]*docker.Engine, 0, len(engines))
			for _, e := range engines {
				if d, ok := e.(*docker.Engine); ok {
					all = append(all, d)
				}
			}
			return docker.DistinctEngines(all)
		},
		Thaw: func(ctx context.Context, e workspace.Engine, configPath, box string) error {
			d, ok := e.(*docker.Engine)
			if !ok {
				return errNotDocker
			}
			return backup.Thaw(ctx, configPath, d, box)
		},
		Stream: func(ctx context.Context, from, to workspace.Engine, image string) error {
			src, ok := from.(*docker.Engine)
			dst, ok2 := to.(*docker.Engine)
			if !ok || !ok2 {
				return errNotDocker
			}
			_, err := dst.StreamImage(ctx, src, image)
			return err
		},
		Pull: func(ctx context.Context, to workspace.Engine, ref, image string) error {
			d, ok := to.(*docker.Engine)
			if !ok {
				return errNotDocker
			}
			return d.PullImage(ctx, ref, image)
		},
	})
}

// Of is host's engine as the Docker client the in-box commands need.
func Of(ctx context.Context, ws *workspace.Workspace, host string) (*docker.Engine, error) {
	e, err := ws.Engine(ctx, host)
	if err != nil {
		return nil, err
	}
	d, ok := e.(*docker.Engine)
	if !ok {
		return nil, errNotDocker
	}
	return d, nil
}

// BoxContainer is box name's container of service and its Docker engine
// (see Workspace.BoxContainer).
func BoxContainer(ctx context.Context, ws *workspace.Workspace, name, service string, running bool, lockAs string) (*docker.Engine, reconcile.Container, error) {
	e, c, err := ws.BoxContainer(ctx, name, service, running, lockAs)
	if err != nil {
		return nil, c, err
	}
	d, ok := e.(*docker.Engine)
	if !ok {
		return nil, c, fmt.Errorf("%s: %w", name, errNotDocker)
	}
	return d, c, nil
}

// Logs writes the logs (o) of box name's container of service to stdout
// and stderr.
func Logs(ctx context.Context, ws *workspace.Workspace, name, service string, o docker.LogOptions, stdout, stderr io.Writer) error {
	e, c, err := BoxContainer(ctx, ws, name, service, false, "")
	if err != nil {
		return err
	}
	return e.Logs(ctx, c.ID, o, stdout, stderr)
}

// Apply runs p through ws's applier (Workspace.Apply) with o, its moves
// carried between ws's engines by Mover: writer names the program in the
// archives, o.Init bounds the wait for a moved box's hb init too, and step
// shows a box's progress.
func Apply(ctx context.Context, ws *workspace.Workspace, p *reconcile.Plan, writer string, step func(box, msg string), o workspace.ApplyOptions) error {
	o.Mover = mover(ws, writer, o.Init, step)
	return ws.Apply(ctx, p, o)
}

// mover wires the applier's moves to ws's engines: writer names the
// program in the archives' manifests, init bounds the wait for a moved
// box's hb init, step shows a box's progress.
func mover(ws *workspace.Workspace, writer string, init hb.Wait, step func(box, msg string)) *backup.Mover {
	return &backup.Mover{
		Engine: func(ctx context.Context, host string) (backup.Engine, error) { return Of(ctx, ws, host) },
		Agent: func(ctx context.Context, host, box string) (reconcile.Container, error) {
			e, err := Of(ctx, ws, host)
			if err != nil {
				return reconcile.Container{}, err
			}
			o, err := e.Observe(ctx)
			if err != nil {
				return reconcile.Container{}, err
			}
			c, ok := o.Of(box).Container(compose.AgentService)
			if !ok {
				return c, &workspace.NoContainerError{Box: box, Service: compose.AgentService}
			}
			return c, nil
		},
		Recipients: ws.Config.Recipients,
		Writer:     writer,
		Init:       init,
		Step:       step,
		DoctorWith: func(ctx context.Context, host, box string) error {
			return doctorMoved(ctx, ws, host, box)
		},
		SameWith: func(ctx context.Context, a, b string) (bool, error) {
			ea, err := Of(ctx, ws, a)
			if err != nil {
				return false, err
			}
			eb, err := Of(ctx, ws, b)
			if err != nil {
				return false, err
			}
			return ea.ID() != "" && ea.ID() == eb.ID(), nil
		},
	}
}

// doctorMoved checks the new copy of a moved box on host, observed afresh,
// and fails naming every failed check.
func doctorMoved(ctx context.Context, ws *workspace.Workspace, host, box string) error {
	e, err := Of(ctx, ws, host)
	if err != nil {
		return err
	}
	o, err := e.Observe(ctx, ws.Image())
	if err != nil {
		return err
	}
	rep := ws.DoctorOn(ctx, host, box, o.Of(box), e, e)
	if rep.OK {
		return nil
	}
	var failed []string
	for _, c := range rep.Checks {
		if !c.OK {
			failed = append(failed, fmt.Sprintf("%s %s: %s", c.Where, c.Name, c.Detail))
		}
	}
	return fmt.Errorf("doctor found problems: %s", strings.Join(failed, "; "))
}

// Exec runs opts in box name's running agent container once the box's hb
// init has finished (wait), and returns the command's exit code. ready,
// when not nil, runs only then, just before the command, and what it
// returns once the command ends: a terminal made raw, then restored.
func Exec(ctx context.Context, ws *workspace.Workspace, name string, wait hb.Wait, opts docker.ExecOptions, ready func() (restore func())) (int, error) {
	e, c, err := ReadyAgent(ctx, ws, name, wait)
	if err != nil {
		return 0, err
	}
	if ready != nil {
		defer ready()()
	}
	code, err := e.Exec(ctx, c.ID, opts)
	if err != nil || code == 0 || ctx.Err() != nil {
		return code, err
	}
	// A command killed with its container (an apply recreating the box, a
	// stop by any program) says so rather than exiting with a bare 137.
	// Only a command ended by a signal is asked about; the engine reports
	// the stop a moment after the processes died, so it is waited for.
	if code > 128 && stopping(context.WithoutCancel(ctx), e, c.ID, 30) {
		return code, &ReplacedError{Box: name, Code: code, Holder: reconcile.BoxHolder(ws.Path, name)}
	}
	return code, nil
}

// stopping reports whether container id is stopped, asking up to tries
// times 100 ms apart: a command killed by a signal may have been killed by
// its container's stop, which the engine reports as done a moment after
// the processes die.
func stopping(ctx context.Context, e *docker.Engine, id string, tries int) bool {
	for i := range tries {
		if i > 0 {
			time.Sleep(100 * time.Millisecond)
		}
		running, err := e.StillRunning(ctx, id)
		if err != nil {
			return false
		}
		if !running {
			return true
		}
	}
	return false
}

// ReplacedError is a command in a box whose agent container was stopped or
// replaced while it ran, and killed with it.
type ReplacedError struct {
	Box  string
	Code int
	// Holder is the boxes process changing the box, if one still is.
	Holder string
}

func (e *ReplacedError) Error() string {
	return fmt.Sprintf("box %s's agent container was stopped or replaced while the command ran, and the command ended with it (exit %d)", e.Box, e.Code)
}

// Hint names who is changing the box, when that is known.
func (e *ReplacedError) Hint() string {
	if e.Holder != "" {
		return workspace.BusyHint(e.Holder)
	}
	return "an apply, stop or rm changed the box; boxes ls shows it now"
}

// ReadyAgent is box name's running agent container and its engine once the
// box's hb init has finished: right after apply creates a box it may still
// be running, and a container whose healthcheck (that same probe) passed
// needs no wait.
func ReadyAgent(ctx context.Context, ws *workspace.Workspace, name string, wait hb.Wait) (*docker.Engine, reconcile.Container, error) {
	e, c, err := BoxContainer(ctx, ws, name, compose.AgentService, true, "")
	if err != nil || c.Healthy {
		return e, c, err
	}
	return e, c, hb.WaitInit(ctx, e, name, c.ID, wait)
}
