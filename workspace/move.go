package workspace

import (
	"context"
	"fmt"
	"strings"

	"github.com/hermes-box/boxes/apply"
	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
)

// mover carries the moves of an apply with o between w's engines: o.Writer
// names the program in the archives, o.Init bounds the wait for a moved
// box's hb init, and pr shows a box's progress.
func (w *Workspace) mover(o ApplyOptions, pr apply.Progress) *backup.Mover {
	return &backup.Mover{Hosts: hosts{w}, Recipients: w.Config.Recipients, Writer: o.Writer, Init: o.Init, Step: pr.Step}
}

// hosts are w's hosts as saves, restores and moves reach them.
type hosts struct{ w *Workspace }

var _ backup.MoveHosts = hosts{}

// BoxEngine is host's engine.
func (h hosts) BoxEngine(ctx context.Context, host string) (engine.Inside, error) {
	e, err := h.w.Engine(ctx, host)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// AgentNow is box's agent container on host as the engine has it now, not
// as w last observed it.
func (h hosts) AgentNow(ctx context.Context, host, box string) (engine.Container, error) {
	e, err := h.w.Engine(ctx, host)
	if err != nil {
		return engine.Container{}, err
	}
	o, err := e.Observe(ctx)
	if err != nil {
		return engine.Container{}, err
	}
	c, ok := o.Of(box).Container(compose.AgentService)
	if !ok {
		return c, &NoContainerError{Box: box, Service: compose.AgentService}
	}
	return c, nil
}

// DoctorMoved checks the new copy of a moved box on host, observed afresh,
// as boxes doctor does, and fails naming every failed check.
func (h hosts) DoctorMoved(ctx context.Context, host, box string) error {
	e, err := h.w.Engine(ctx, host)
	if err != nil {
		return err
	}
	o, err := e.Observe(ctx, h.w.Image())
	if err != nil {
		return err
	}
	rep := h.w.doctorOn(ctx, host, box, o.Of(box), e)
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

// SameEngine reports whether hosts a and b reach one engine.
func (h hosts) SameEngine(ctx context.Context, a, b string) (bool, error) {
	ea, err := h.w.Engine(ctx, a)
	if err != nil {
		return false, err
	}
	eb, err := h.w.Engine(ctx, b)
	if err != nil {
		return false, err
	}
	return ea.ID() != "" && ea.ID() == eb.ID(), nil
}
