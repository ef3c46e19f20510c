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
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/pool"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
)

// LeaseOptions tune lease, renew, release and leases: what they are asked
// (pool.LeaseOptions), and how a reset deletes and makes boxes.
type LeaseOptions struct {
	pool.LeaseOptions
	// Apply is how resets delete and make boxes.
	Apply ApplyOptions
}

func (o LeaseOptions) step(format string, args ...any) {
	if o.Step != nil {
		o.Step(fmt.Sprintf(format, args...))
	}
}

// pool is the pool named name, or an error naming those there are.
func (w *Workspace) pool(name string) (spec.Pool, error) {
	if p, ok := w.Config.Pool(name); ok {
		return p, nil
	}
	var names []string
	for _, p := range w.Config.Pools {
		names = append(names, p.Name)
	}
	err := fmt.Errorf("no pool %q in %s", name, w.opts.Shown(w.Path))
	if len(names) == 0 {
		return spec.Pool{}, hint.Wrap(err, "pools are declared under pools: in %s", w.opts.Shown(w.Path))
	}
	return spec.Pool{}, hint.Wrap(err, "its pools: %s", strings.Join(names, ", "))
}

// Lease claims a free box of pool name for o.Holder for o.TTL, waiting up
// to o.Wait for one. When none is free it first resets the pool's expired
// leases. The box's token is stored in .boxes/secrets as apply stores it.
func (w *Workspace) Lease(ctx context.Context, name string, o LeaseOptions) (pool.LeaseRow, error) {
	p, err := w.pool(name)
	if err != nil {
		return pool.LeaseRow{}, err
	}
	if err := pool.CheckTTL(o.TTL); err != nil {
		return pool.LeaseRow{}, err
	}
	start := time.Now()
	if row, claimed, err := w.quickClaim(ctx, p, o); claimed || err != nil {
		return row, err
	}
	reaped := false
	for {
		if err := w.Observe(ctx, p.Host); err != nil {
			return pool.LeaseRow{}, err
		}
		row, err := w.claim(ctx, p, o)
		var none *pool.NoFreeBoxError
		if !errors.As(err, &none) {
			return row, err
		}
		if !reaped {
			reaped = true
			if n, err := w.reapPool(ctx, p, o); err != nil {
				return pool.LeaseRow{}, err
			} else if n > 0 {
				continue
			}
		}
		if time.Since(start) >= o.Wait {
			none.Waited = o.Wait
			return pool.LeaseRow{}, none
		}
		select {
		case <-ctx.Done():
			return pool.LeaseRow{}, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// quickClaim claims a free box of p seen on a look at p alone, where its
// host's engine can take one (engine.PoolObserver): a warm pool needs no
// more than its boxes' containers and lease markers, one list. claimed is
// false when no box was claimed: none was free and ready, or others were
// first to each one tried. Lease then looks at the host whole, where the
// pool's counts, the reset of expired leases and the wait are.
func (w *Workspace) quickClaim(ctx context.Context, p spec.Pool, o LeaseOptions) (row pool.LeaseRow, claimed bool, err error) {
	e, err := w.Engine(ctx, p.Host)
	if err != nil {
		return pool.LeaseRow{}, false, err
	}
	po, ok := e.(engine.PoolObserver)
	if !ok {
		return pool.LeaseRow{}, false, nil
	}
	obs, err := po.ObservePool(ctx, w.Config.Fleet, p.Name)
	if err != nil {
		return pool.LeaseRow{}, false, err
	}
	// The pool's boxes as that look shows them; the workspace's own view of
	// the host (Observed, Config.Boxes) is left as it was.
	boxes := reconcile.WithPools(w.Config, w.declared, map[string]*engine.Observed{p.Host: obs})
	ready, _ := pool.FreeBoxes(w.Config.Fleet, boxes, p, obs, nil)
	if len(ready) == 0 {
		return pool.LeaseRow{}, false, nil
	}
	id, err := pool.NewLeaseID()
	if err != nil {
		return pool.LeaseRow{}, false, err
	}
	row, err = w.claimFirst(ctx, e, p, obs, ready, id, o, map[string]bool{})
	if errors.Is(err, errClaimsLost) {
		return pool.LeaseRow{}, false, nil
	}
	return row, true, err
}

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
		ready, none := pool.FreeBoxes(w.Config.Fleet, w.Config.Boxes, p, w.Observed[p.Host], lost)
		if len(ready) == 0 {
			return pool.LeaseRow{}, none
		}
		row, err := w.claimFirst(ctx, e, p, w.Observed[p.Host], ready, id, o, lost)
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

// claimFirst claims the first of ready, boxes of p on engine e as obs
// shows them, that it can, for lease id; a box another claimed first is
// added to lost.
func (w *Workspace) claimFirst(ctx context.Context, e engine.Engine, p spec.Pool, obs *engine.Observed, ready []string, id string, o LeaseOptions, lost map[string]bool) (pool.LeaseRow, error) {
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

// leasedRow is the row of a box just claimed or renewed: its token is read
// from its executor's container (the engine's copy is the one that counts:
// another working directory may have made the box) and stored here.
func (w *Workspace) leasedRow(ctx context.Context, p spec.Pool, r engine.Resources, l engine.Lease) (pool.LeaseRow, error) {
	row := pool.RowOf(p.Host, l, time.Now())
	e, err := w.Engine(ctx, p.Host)
	if err != nil {
		return row, err
	}
	if _, ok := r.Container(compose.ExecutorService); !ok {
		return row, fmt.Errorf("box %s has no executor container", l.Box)
	}
	token, _, ok := w.containerToken(ctx, p.Host, r, compose.ExecutorService)
	if !ok {
		return row, fmt.Errorf("box %s's token cannot be read from its executor container (gone since it was looked at?)", l.Box)
	}
	if err := w.Tokens.Keep(l.Box, token); err != nil {
		return row, err
	}
	row.TokenFile = w.opts.Shown(w.Tokens.Path(l.Box))
	if _, port, ok := r.Published(compose.ExecutorPort); ok {
		row.Executor = e.ExecutorReach(port.HostIP, port.HostPort).URL
	}
	return row, nil
}

// leaseOf observes box name's host and returns its pool and lease; a box
// that is no pool's is an error.
func (w *Workspace) leaseOf(ctx context.Context, name string) (spec.Pool, engine.Lease, engine.Resources, error) {
	p, ok := w.Config.PoolOf(name)
	if !ok {
		// A box of a pool boxes.yaml no longer has (or that moved to
		// another host) keeps its lease until it is released.
		if err := w.Observe(ctx); err != nil {
			return p, engine.Lease{}, engine.Resources{}, err
		}
		for _, host := range w.Hosts() {
			if l, held := w.Observed[host].Leases(w.Config.Fleet)[name]; held {
				l.Box = name
				return spec.Pool{Name: l.Pool, Host: host}, l, w.Observed[host].Of(name), nil
			}
		}
		return spec.Pool{}, engine.Lease{}, engine.Resources{}, hint.Wrap(fmt.Errorf("%s is no pool's box", name), "boxes leases lists the pools' boxes")
	}
	if err := w.Observe(ctx, p.Host); err != nil {
		return p, engine.Lease{}, engine.Resources{}, err
	}
	obs := w.Observed[p.Host]
	l := obs.Leases(w.Config.Fleet)[name]
	l.Box, l.Pool = name, p.Name
	return p, l, obs.Of(name), nil
}

// Renew extends box name's lease to o.TTL from now. An expired lease is
// not renewed: it is the reaper's.
func (w *Workspace) Renew(ctx context.Context, name string, o LeaseOptions) (pool.LeaseRow, error) {
	if err := pool.CheckTTL(o.TTL); err != nil {
		return pool.LeaseRow{}, err
	}
	p, l, r, err := w.leaseOf(ctx, name)
	if err != nil {
		return pool.LeaseRow{}, err
	}
	now := time.Now()
	if err := pool.CheckRenew(name, p.Name, l, o.Lease, now); err != nil {
		return pool.LeaseRow{}, err
	}
	e, err := w.Engine(ctx, p.Host)
	if err != nil {
		return pool.LeaseRow{}, err
	}
	agent, _ := r.Container(compose.AgentService)
	m := pool.RenewMark(w.Config.Fleet, p.Name, l, now, o.TTL)
	if m.ID, err = e.CreateLeaseMark(ctx, agent.Image, m); err != nil {
		return pool.LeaseRow{}, fmt.Errorf("renewing %s: %w", name, err)
	}
	l.Renewals = append(l.Renewals, m)
	return w.leasedRow(ctx, p, r, l)
}

// Release ends box name's lease: the box is deleted, with its data and
// token, and the pool made whole again (see reset).
func (w *Workspace) Release(ctx context.Context, name string, o LeaseOptions) error {
	p, l, _, err := w.leaseOf(ctx, name)
	if err != nil {
		return err
	}
	if err := pool.CheckRelease(name, l, o.Lease); err != nil {
		return err
	}
	return w.reset(ctx, p, l, o)
}

// Leases lists the boxes of every pool with their leases, and every other
// pool box of the fleet the engines hold: leased ones of pools boxes.yaml
// no longer has, and free ones a plan deletes ("to delete"); with reap, it
// first resets the reapable leases (see pool.Reapable).
func (w *Workspace) Leases(ctx context.Context, reap bool, o LeaseOptions) ([]pool.LeaseRow, error) {
	if err := w.Observe(ctx); err != nil {
		return nil, err
	}
	if reap {
		if _, err := w.reap(ctx, o); err != nil {
			return nil, err
		}
		if err := w.Observe(ctx); err != nil {
			return nil, err
		}
	}
	rows := []pool.LeaseRow{}
	now := time.Now()
	listed := map[[2]string]bool{}
	for _, b := range w.Config.Boxes {
		if b.Pool == "" {
			continue
		}
		l := w.Observed[b.Host].Leases(w.Config.Fleet)[b.Name]
		l.Box, l.Pool = b.Name, b.Pool
		rows = append(rows, pool.BoxRow(b.Host, l, w.Observed[b.Host].Of(b.Name), now))
		listed[[2]string{b.Host, b.Name}] = true
	}
	// The pool boxes boxes.yaml no longer counts, by their label: the
	// leased ones are kept for their holders; the free ones (beyond a
	// smaller size, or of a pool taken out or moved) a plan deletes, and
	// they stay until an apply's delete is confirmed.
	for _, host := range w.Hosts() {
		o := w.Observed[host]
		if o == nil {
			continue
		}
		leases := o.Leases(w.Config.Fleet)
		for name, l := range leases {
			if !listed[[2]string{host, name}] {
				l.Box = name
				rows = append(rows, pool.RowOf(host, l, now))
				listed[[2]string{host, name}] = true
			}
		}
		for _, name := range o.Boxes() {
			r := o.Of(name)
			if owner := reconcile.PoolOf(r); owner != "" && !listed[[2]string{host, name}] && r.Owned(w.Config.Fleet) && r.HeldBy(w.Config.Fleet) == "" {
				rows = append(rows, pool.LeaseRow{Box: name, Pool: owner, Host: host, State: "to delete"})
			}
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Box < rows[j].Box })
	return rows, nil
}

// HasLeases reports whether any host observed holds lease markers of this
// fleet.
func (w *Workspace) HasLeases() bool {
	for _, o := range w.Observed {
		if o != nil && len(o.Leases(w.Config.Fleet)) > 0 {
			return true
		}
	}
	return false
}
