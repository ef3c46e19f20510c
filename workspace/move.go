package workspace

import (
	"context"
	"fmt"
	"strings"

	"github.com/hermes-box/boxes/apply"
	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/reconcile"
)

// mover carries the moves of an apply with o between w's engines: o.Writer
// names the program in the archives, o.Init bounds the wait for a moved
// box's hb init, and pr shows a box's progress.
func (w *Workspace) mover(o ApplyOptions, pr apply.Progress) *backup.Mover {
	return &backup.Mover{
		Engine:     w.backupEngine,
		Agent:      w.agentNow,
		Recipients: w.Config.Recipients,
		Writer:     o.Writer,
		Init:       o.Init,
		DoctorWith: w.doctorMoved,
		SameWith:   w.sameEngine,
		Step:       pr.Step,
	}
}

// backupEngine is host's engine as saves, restores and moves use it.
func (w *Workspace) backupEngine(ctx context.Context, host string) (backup.Engine, error) {
	e, err := w.Engine(ctx, host)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// agentNow is box's agent container on host as the engine has it now, not
// as w last observed it.
func (w *Workspace) agentNow(ctx context.Context, host, box string) (reconcile.Container, error) {
	e, err := w.Engine(ctx, host)
	if err != nil {
		return reconcile.Container{}, err
	}
	o, err := e.Observe(ctx)
	if err != nil {
		return reconcile.Container{}, err
	}
	c, ok := o.Of(box).Container(compose.AgentService)
	if !ok {
		return c, &NoContainerError{Box: box, Service: compose.AgentService}
	}
	return c, nil
}

// doctorMoved checks the new copy of a moved box on host, observed afresh,
// as boxes doctor does, and fails naming every failed check.
func (w *Workspace) doctorMoved(ctx context.Context, host, box string) error {
	e, err := w.Engine(ctx, host)
	if err != nil {
		return err
	}
	o, err := e.Observe(ctx, w.Image())
	if err != nil {
		return err
	}
	rep := w.doctorOn(ctx, host, box, o.Of(box), e)
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

// sameEngine reports whether hosts a and b reach one engine.
func (w *Workspace) sameEngine(ctx context.Context, a, b string) (bool, error) {
	ea, err := w.Engine(ctx, a)
	if err != nil {
		return false, err
	}
	eb, err := w.Engine(ctx, b)
	if err != nil {
		return false, err
	}
	return ea.ID() != "" && ea.ID() == eb.ID(), nil
}
