package workspace

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/statedir"
)

// The commands that work inside a box through its engine: exec, enter,
// logs.

// boxContainer is box name's container of service and its engine (see
// BoxContainer).
func (w *Workspace) boxContainer(ctx context.Context, name, service string, running bool) (engine.Engine, engine.Container, error) {
	host, c, err := w.BoxContainer(ctx, name, service, running, "")
	if err != nil {
		return nil, c, err
	}
	e, err := w.Engine(ctx, host)
	return e, c, err
}

// Logs writes the logs (o) of box name's container of service to stdout
// and stderr.
func (w *Workspace) Logs(ctx context.Context, name, service string, o engine.LogOptions, stdout, stderr io.Writer) error {
	e, c, err := w.boxContainer(ctx, name, service, false)
	if err != nil {
		return err
	}
	return e.Logs(ctx, c.ID, o, stdout, stderr)
}

// Exec runs opts in box name's running agent container once the box's hb
// init has finished (wait), and returns the command's exit code. ready,
// when not nil, runs only then, just before the command, and what it
// returns once the command ends: a terminal made raw, then restored.
func (w *Workspace) Exec(ctx context.Context, name string, wait hb.Wait, opts engine.ExecOptions, ready func() (restore func())) (int, error) {
	e, c, err := w.readyAgent(ctx, name, wait)
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
		return code, &ReplacedError{Box: name, Code: code, Holder: statedir.BoxHolder(w.Path, name)}
	}
	return code, nil
}

// stopping reports whether container id is stopped, asking up to tries
// times 100 ms apart: a command killed by a signal may have been killed by
// its container's stop, which the engine reports as done a moment after
// the processes die.
func stopping(ctx context.Context, e engine.Engine, id string, tries int) bool {
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
		return BusyHint(e.Holder)
	}
	return "an apply, stop or rm changed the box; boxes ls shows it now"
}

// readyAgent is box name's running agent container and its engine once the
// box's hb init has finished: right after apply creates a box it may still
// be running, and a container whose healthcheck (that same probe) passed
// needs no wait.
func (w *Workspace) readyAgent(ctx context.Context, name string, wait hb.Wait) (engine.Engine, engine.Container, error) {
	e, c, err := w.boxContainer(ctx, name, compose.AgentService, true)
	if err != nil || c.Health == engine.Healthy {
		return e, c, err
	}
	return e, c, hb.WaitInit(ctx, e, name, c.ID, wait)
}
