package workspace

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/pool"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
)

// reset deletes a leased box, its snapshots and its lease, then tops its
// pool up. The reset's own marker is made first (so that one process alone
// resets the box) and removed last (so that a kill half-way leaves the name
// taken, and the next reap finishes the work). Once its marker is made the
// box is looked at again: a lease that changed meanwhile (another process
// reset the box, and someone leased it anew) is not this reset's.
func (w *Workspace) reset(ctx context.Context, p spec.Pool, l engine.Lease, o LeaseOptions) error {
	e, err := w.Engine(ctx, p.Host)
	if err != nil {
		return err
	}
	if l.Reset != nil {
		if !pool.ResetStale(*l.Reset, time.Now()) {
			return &pool.ResetBusyError{Box: l.Box, Why: fmt.Sprintf("%s is resetting it since %s", l.Reset.By, l.Reset.Started.Format(time.RFC3339))}
		}
		if err := e.RemoveContainer(ctx, l.Reset.ID); err != nil {
			return err
		}
	}
	image := w.Image()
	if agent, ok := w.Observed[p.Host].Of(l.Box).Container(compose.AgentService); ok {
		image = agent.Image
	}
	m := pool.ResetMark(w.Config.Fleet, p.Name, l.Box, time.Now())
	if m.ID, err = e.CreateLeaseMark(ctx, image, m); err != nil {
		if errors.Is(err, engine.ErrLeaseTaken) {
			return &pool.ResetBusyError{Box: l.Box, Why: "another boxes is resetting it"}
		}
		return err
	}
	if err := w.Observe(ctx, p.Host); err != nil {
		return err
	}
	obs := w.Observed[p.Host]
	now := obs.Leases(w.Config.Fleet)[l.Box]
	if pool.ClaimID(now) != pool.ClaimID(l) {
		if err := e.RemoveContainer(ctx, m.ID); err != nil {
			return err
		}
		return &pool.ResetBusyError{Box: l.Box, Why: "its lease changed since it was looked at"}
	}
	o.step("resetting %s (pool %s): deleting it with its data, snapshots and token", l.Box, p.Name)
	if r := obs.Of(l.Box); !r.Empty() {
		if _, plan := w.Removal(l.Box, p.Host, r); plan != nil {
			ao := o.Apply
			ao.resetting = l.Box
			if err := w.Apply(ctx, plan, ao); err != nil {
				return fmt.Errorf("resetting %s: %w", l.Box, err)
			}
		}
	}
	// A holder's snapshots of the box are the holder's files too.
	for _, snap := range obs.SnapshotsOf(l.Box) {
		if snap.Fleet == w.Config.Fleet {
			if err := e.RemoveVolume(ctx, snap.Volume); err != nil {
				return fmt.Errorf("resetting %s: removing snapshot %s: %w", l.Box, snap.Label, err)
			}
		}
	}
	if err := w.Tokens.Remove(l.Box); err != nil {
		return err
	}
	// Every marker of the box, this reset's last.
	for _, mark := range now.Marks() {
		if err := e.RemoveContainer(ctx, mark.ID); err != nil {
			return fmt.Errorf("resetting %s: removing %s: %w", l.Box, mark.Name, err)
		}
	}
	return w.topUp(ctx, p, o)
}

// topUp makes p's missing free boxes, as apply would.
func (w *Workspace) topUp(ctx context.Context, p spec.Pool, o LeaseOptions) error {
	if err := w.Observe(ctx, p.Host); err != nil {
		return err
	}
	var missing []string
	for _, b := range w.Config.Boxes {
		if b.Pool == p.Name && w.Observed[p.Host].Of(b.Name).Empty() {
			missing = append(missing, b.Name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if !w.applyLocked {
		if err := w.LockApply("boxes release"); err != nil {
			o.step("pool %s: not making %s now: %v; the next apply makes them", p.Name, strings.Join(missing, ", "), err)
			return nil
		}
	}
	o.step("pool %s: making %s", p.Name, strings.Join(missing, ", "))
	plan, err := w.Plan(ctx, reconcile.PlanOptions{Target: missing})
	if err == nil {
		err = w.Apply(ctx, plan, o.Apply)
	}
	if err != nil {
		o.step("pool %s: making %s failed: %v; the next apply makes them", p.Name, strings.Join(missing, ", "), err)
	}
	return nil
}

// reapHost resets the reapable leases on host of the boxes poolOf says
// are its; poolOf names the pool a box belongs to there (false: not this
// reap's). It returns how many boxes it reset; a reset another process
// runs, or whose lease changed meanwhile, is left.
func (w *Workspace) reapHost(ctx context.Context, host string, poolOf func(box string, l engine.Lease) (spec.Pool, bool), o LeaseOptions) (int, error) {
	leases := w.Observed[host].Leases(w.Config.Fleet)
	names := make([]string, 0, len(leases))
	for name := range leases {
		names = append(names, name)
	}
	sort.Strings(names)
	now := time.Now()
	n := 0
	for _, name := range names {
		l := leases[name]
		l.Box = name
		p, ok := poolOf(name, l)
		why := pool.Reapable(l, now)
		if !ok || why == "" {
			continue
		}
		o.step("%s", why)
		var busy *pool.ResetBusyError
		if err := w.reset(ctx, p, l, o); errors.As(err, &busy) {
			o.step("%v", busy)
			continue
		} else if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// reapPool resets p's reapable leases (see pool.Reapable).
func (w *Workspace) reapPool(ctx context.Context, p spec.Pool, o LeaseOptions) (int, error) {
	return w.reapHost(ctx, p.Host, func(box string, _ engine.Lease) (spec.Pool, bool) {
		owner, ok := w.Config.PoolOf(box)
		return p, ok && owner.Name == p.Name
	}, o)
}

// reapOrphans resets the reapable leases of boxes whose pool boxes.yaml no
// longer has on the host they are on, on every host observed.
func (w *Workspace) reapOrphans(ctx context.Context, o LeaseOptions) (int, error) {
	total := 0
	for _, host := range w.Hosts() {
		if w.Observed[host] == nil {
			continue
		}
		n, err := w.reapHost(ctx, host, func(box string, l engine.Lease) (spec.Pool, bool) {
			owner, ok := w.Config.PoolOf(box)
			return spec.Pool{Name: l.Pool, Host: host}, !ok || owner.Host != host
		}, o)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// reap resets the reapable leases of every pool, and of the boxes of
// pools boxes.yaml no longer has, on hosts observed.
func (w *Workspace) reap(ctx context.Context, o LeaseOptions) (int, error) {
	total := 0
	for _, p := range w.Config.Pools {
		if w.Observed[p.Host] == nil {
			continue
		}
		n, err := w.reapPool(ctx, p, o)
		total += n
		if err != nil {
			return total, err
		}
	}
	n, err := w.reapOrphans(ctx, o)
	return total + n, err
}

// ReapExpired resets the reapable leases everywhere (apply's last step).
func (w *Workspace) ReapExpired(ctx context.Context, o LeaseOptions) (int, error) {
	if err := w.Observe(ctx); err != nil {
		return 0, err
	}
	return w.reap(ctx, o)
}
