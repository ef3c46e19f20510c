package workspace

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/spec"
)

// reapGrace is how long after its expiry a lease is left before it is
// reaped: a renew refused at the expiry cannot then meet the reset.
const reapGrace = 5 * time.Second

// reapable says why lease l is for the reaper to reset at now: expired,
// a reset or an apply's claim cut short, or renewals left of a lease
// released half-way; "" when it is not.
func reapable(l engine.Lease, now time.Time) string {
	switch {
	case l.Claim != nil && l.Claim.By != "":
		// An apply's claim (see guardPool): its apply died on this machine.
		if deadHere(*l.Claim) || l.ExpiredAt(now.Add(-reapGrace)) {
			return "the apply that held it is gone"
		}
	case l.Claim != nil && l.ExpiredAt(now.Add(-reapGrace)):
		return fmt.Sprintf("the lease of %s (holder %q) expired at %s", l.Box, l.Claim.Holder, l.Expires().UTC().Format(time.RFC3339))
	case l.Reset != nil && resetStale(*l.Reset, now):
		return fmt.Sprintf("the reset of %s by %s was cut short", l.Box, l.Reset.By)
	case l.Claim == nil && l.Reset == nil:
		return fmt.Sprintf("%s has renewals of a lease released half-way", l.Box)
	}
	return ""
}

// reapHost resets the reapable leases on host of the boxes pool says are
// its; pool names the pool a box belongs to there (false: not this
// reap's). It returns how many boxes it reset; a reset another process
// runs, or whose lease changed meanwhile, is left.
func (w *Workspace) reapHost(ctx context.Context, host string, pool func(box string, l engine.Lease) (spec.Pool, bool), o LeaseOptions) (int, error) {
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
		p, ok := pool(name, l)
		why := reapable(l, now)
		if !ok || why == "" {
			continue
		}
		o.step("%s", why)
		var busy *ResetBusyError
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

// reapPool resets p's reapable leases (see reapable).
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
