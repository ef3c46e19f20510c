package workspace

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/pool"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
)

// claim claims the first ready free box of p as observed. When other
// claims take every box it tries, it looks at p's host again, once the
// engine lists them: a box come free meanwhile is tried, and a failure
// counts the boxes as the engine holds them once the claims failed (those
// just leased by others among them), not as it held them before.
func (w *Workspace) claim(ctx context.Context, p spec.Pool, o LeaseOptions) (pool.LeaseRow, error) {
	e, err := w.Engine(ctx, p.Host)
	if err != nil {
		return pool.LeaseRow{}, err
	}
	id, err := pool.NewLeaseID()
	if err != nil {
		return pool.LeaseRow{}, err
	}
	// lost are the boxes whose claim another was first to: each is tried
	// once, so that this ends.
	lost := map[string]bool{}
	for {
		ready, none := pool.FreeBoxes(w.Config, p, w.Observed[p.Host], lost)
		if len(ready) == 0 {
			return pool.LeaseRow{}, none
		}
		row, err := w.claimFirst(ctx, e, p, ready, id, o, lost)
		if !errors.Is(err, errClaimsLost) {
			return row, err
		}
		if err := w.observeClaims(ctx, p.Host, lost); err != nil {
			return pool.LeaseRow{}, err
		}
	}
}

// claimsListed is how long a claim that lost waits for the engine to list
// the claims that won.
const claimsListed = 2 * time.Second

// observeClaims observes host until it lists a lease of each box in lost,
// for up to claimsListed: the engine refuses a name as soon as another
// takes it, and lists that container only once it is made.
func (w *Workspace) observeClaims(ctx context.Context, host string, lost map[string]bool) error {
	deadline := time.Now().Add(claimsListed)
	for {
		if err := w.Observe(ctx, host); err != nil {
			return err
		}
		leases := w.Observed[host].Leases(w.Config.Fleet)
		listed := true
		for name := range lost {
			listed = listed && leases[name].Held()
		}
		if listed || time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// errClaimsLost is claimFirst's failure when another claim was first to
// every box it tried.
var errClaimsLost = errors.New("every box tried was claimed by another first")

// claimFirst claims the first of ready, boxes of p on engine e, that it
// can, for lease id; a box another claimed first is added to lost.
func (w *Workspace) claimFirst(ctx context.Context, e engine.Engine, p spec.Pool, ready []string, id string, o LeaseOptions, lost map[string]bool) (pool.LeaseRow, error) {
	obs := w.Observed[p.Host]
	var lastErr error
	for _, name := range ready {
		r := obs.Of(name)
		agent, _ := r.Container(compose.AgentService)
		m := pool.ClaimMark(w.Config.Fleet, p.Name, name, o.Holder, id, time.Now(), o.TTL)
		markID, err := e.CreateLeaseMark(ctx, agent.Image, m)
		if errors.Is(err, engine.ErrLeaseTaken) {
			lost[name] = true // another claim was first
			continue
		}
		if err != nil {
			return pool.LeaseRow{}, fmt.Errorf("claiming %s: %w", name, err)
		}
		m.ID = markID
		row, err := w.leasedRow(ctx, p, r, engine.Lease{Box: name, Pool: p.Name, Claim: &m})
		if err != nil {
			// The box seen is gone (reset since it was looked at), or its
			// token cannot be had: the claim is given up, and the next
			// box tried.
			if rerr := e.RemoveContainer(ctx, markID); rerr != nil {
				return pool.LeaseRow{}, fmt.Errorf("claimed %s, but: %w; and giving the claim up failed: %v", name, err, rerr)
			}
			lastErr = fmt.Errorf("claiming %s: %w", name, err)
			continue
		}
		return row, nil
	}
	if lastErr != nil {
		return pool.LeaseRow{}, lastErr
	}
	return pool.LeaseRow{}, errClaimsLost
}

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
