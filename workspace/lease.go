package workspace

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/pool"
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

// leasedRow is the row of a box just claimed or renewed: its token is read
// from its executor's container (the engine's copy is the one that counts:
// another working directory may have made the box) and stored here.
func (w *Workspace) leasedRow(ctx context.Context, p spec.Pool, r engine.Resources, l engine.Lease) (pool.LeaseRow, error) {
	row := pool.RowOf(p.Host, l, time.Now())
	e, err := w.Engine(ctx, p.Host)
	if err != nil {
		return row, err
	}
	exec, ok := r.Container(compose.ExecutorService)
	if !ok {
		return row, fmt.Errorf("box %s has no executor container", l.Box)
	}
	token, _, ok := w.containerToken(ctx, p.Host, r, compose.ExecutorService)
	if !ok {
		return row, fmt.Errorf("box %s's token cannot be read from its executor container (gone since it was looked at?)", l.Box)
	}
	if err := w.Tokens.Put(l.Box, token); err != nil {
		return row, err
	}
	row.TokenFile = w.opts.Shown(w.Tokens.Path(l.Box))
	for _, port := range exec.Ports {
		if port.ContainerPort == compose.ExecutorPort {
			row.Executor = e.ExecutorReach(port.HostIP, port.HostPort).URL
		}
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
