package workspace

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/pool"
	"github.com/hermes-box/boxes/spec"
)

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
