package workspace

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/pool"
	"github.com/hermes-box/boxes/reconcile"
)

// guardPool claims, for the length of an apply, each free pool box p
// deletes or recreates, so that no lease takes it under the apply; a box
// leased since the plan was made is left out of it, with a warning. The
// returned func removes the claims. skip is a box a reset deletes, whose
// lease the reset holds.
func (w *Workspace) guardPool(ctx context.Context, p *reconcile.Plan, skip string) (*reconcile.Plan, func(), error) {
	type mark struct {
		e  engine.Engine
		id string
	}
	var marks []mark
	unguard := func() {
		for _, m := range marks {
			if err := m.e.RemoveContainer(context.WithoutCancel(ctx), m.id); err != nil {
				w.opts.Warn("removing apply's claim on a pool box: %v (boxes leases --reap removes it)", err)
			}
		}
	}
	if len(w.Config.Pools) == 0 {
		return p, unguard, nil
	}
	out := *p
	out.Boxes = nil
	for _, b := range p.Boxes {
		owner, ok := w.Config.PoolOf(b.Name)
		if !ok || owner.Host != b.Host || b.Name == skip || (b.Action != reconcile.Delete && b.Action != reconcile.Recreate) {
			out.Boxes = append(out.Boxes, b)
			continue
		}
		e, err := w.Engine(ctx, b.Host)
		if err != nil {
			unguard()
			return nil, nil, err
		}
		image := w.Image()
		if o := w.Observed[b.Host]; o != nil {
			if agent, ok := o.Of(b.Name).Container(compose.AgentService); ok {
				image = agent.Image
			}
		}
		id, err := e.CreateLeaseMark(ctx, image, pool.ApplyMark(w.Config.Fleet, owner.Name, b.Name, time.Now()))
		if errors.Is(err, engine.ErrLeaseTaken) {
			w.opts.Warn("%s was leased since the plan was made: it is left as it is until its release", b.Name)
			continue
		}
		if err != nil {
			unguard()
			return nil, nil, fmt.Errorf("claiming %s for the apply: %w", b.Name, err)
		}
		marks = append(marks, mark{e, id})
		out.Boxes = append(out.Boxes, b)
	}
	return &out, unguard, nil
}

// Confine limits the boxes a command works on to those the engine, as the
// command observes it, says it may: boxes mcp runs exec, logs and doctor
// with one, so that whether a box is a pool's, and whose lease it is, is
// never decided from boxes.yaml alone (a pool taken out of it leaves its
// leased boxes to their holders).
type Confine struct {
	// Lease is the one lease (its ID) under which a box is worked in: the
	// box's claim on its engine must be this lease's, and not expired.
	Lease string
	// NoPool refuses a box that is or was a pool's: its resources carry a
	// pool's label, a lease marker names it, or boxes.yaml puts it in a
	// pool.
	NoPool bool
}

// confined refuses box name, whose resources on host are r as just
// observed, when w's Confine does not let commands work on it.
func (w *Workspace) confined(host, name string, r engine.Resources) error {
	g := w.opts.Confine
	if g.NoPool {
		if pool, ok := w.poolOnEngine(host, name, r); ok {
			what := "a pool's box"
			if pool != "" {
				what = "a box of pool " + pool
			}
			return hint.Wrap(fmt.Errorf("%s is, or was, %s, reached only under its lease; nothing was done", name, what),
				"boxes lease claims a box of a pool; --lease ID then works in it")
		}
	}
	if g.Lease != "" {
		var l engine.Lease
		if o := w.Observed[host]; o != nil {
			l = o.Leases(w.Config.Fleet)[name]
		}
		if err := pool.CheckInLease(name, l, g.Lease, time.Now()); err != nil {
			return err
		}
	}
	return nil
}

// poolOnEngine reports whether box name on host is or was a pool's, and
// which pool's when that is known: its resources r are labelled with a
// pool, a lease marker of any fleet names it there, or boxes.yaml declares
// it in a pool.
func (w *Workspace) poolOnEngine(host, name string, r engine.Resources) (string, bool) {
	if p := reconcile.PoolOf(r); p != "" {
		return p, true
	}
	if o := w.Observed[host]; o != nil {
		for _, m := range o.LeaseMarks {
			if m.Box == name {
				return m.Pool, true
			}
		}
	}
	if p, ok := w.Config.PoolOf(name); ok {
		return p.Name, true
	}
	return "", false
}
