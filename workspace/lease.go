package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/spec"
)

// The bounds of a lease's time to live, and the one it has unless asked.
const (
	MinLeaseTTL     = time.Minute
	MaxLeaseTTL     = 8 * time.Hour
	DefaultLeaseTTL = 30 * time.Minute
)

// LeaseOptions tune lease, renew, release and leases.
type LeaseOptions struct {
	// Holder names who holds the lease, for people (boxes leases).
	Holder string
	// TTL is how long the lease (or a renewal) lasts.
	TTL time.Duration
	// Wait is how long lease waits for a free box; 0 fails at once.
	Wait time.Duration
	// Lease is the lease renew and release act on (its ID, from lease
	// --json): another's is refused. "" acts on whichever lease there is.
	Lease string
	// Apply is how resets delete and make boxes.
	Apply ApplyOptions
	// Step reports what a reset or a reap does, in words.
	Step func(msg string)
}

func (o LeaseOptions) step(format string, args ...any) {
	if o.Step != nil {
		o.Step(fmt.Sprintf(format, args...))
	}
}

// LeaseRow is one pool box as lease and leases show it.
type LeaseRow struct {
	Box  string `json:"box"`
	Pool string `json:"pool"`
	Host string `json:"host"`
	// State is free, leased, expired or resetting; in leases also absent,
	// not running, or to delete.
	State  string `json:"state"`
	Holder string `json:"holder"`
	// Lease is the lease's ID; Expires its end (RFC 3339); both empty when free.
	Lease   string `json:"lease"`
	Expires string `json:"expires"`
	// Executor is the box's executor URL from this machine, "" when not
	// reached directly; TokenFile the file holding its token.
	Executor  string `json:"executor,omitempty"`
	TokenFile string `json:"token_file,omitempty"`
}

// WriteText prints a lease as lease and renew show it.
func (r LeaseRow) WriteText(w io.Writer) {
	fmt.Fprintf(w, "box:      %s\npool:     %s\n", r.Box, r.Pool)
	if r.Host != "" {
		fmt.Fprintf(w, "host:     %s\n", r.Host)
	}
	fmt.Fprintf(w, "holder:   %s\nexpires:  %s\n", r.Holder, r.Expires)
	if r.Executor != "" {
		fmt.Fprintf(w, "executor: %s\n", r.Executor)
	}
	if r.TokenFile != "" {
		fmt.Fprintf(w, "token:    %s\n", r.TokenFile)
	}
}

// NoFreeBoxError is a lease that found no free box in its pool.
type NoFreeBoxError struct {
	Pool                          string
	Size, Leased, Unready, Absent int
	Waited                        time.Duration
}

func (e *NoFreeBoxError) Error() string {
	s := fmt.Sprintf("pool %s has no free box ready: %d leased, %d not running, %d not made yet (it keeps %d free)", e.Pool, e.Leased, e.Unready, e.Absent, e.Size)
	if e.Waited > 0 {
		s += fmt.Sprintf("; waited %s", e.Waited.Round(time.Second))
	}
	return s
}

func (e *NoFreeBoxError) Hint() string {
	return "boxes apply makes the pool's free boxes again; boxes lease --wait 1m waits for one"
}

// checkTTL refuses a time to live out of bounds.
func checkTTL(ttl time.Duration) error {
	if ttl < MinLeaseTTL || ttl > MaxLeaseTTL {
		return hint.Wrap(fmt.Errorf("--ttl %s is out of bounds", ttl), "a lease lasts from %s to %s", MinLeaseTTL, strings.TrimSuffix(MaxLeaseTTL.String(), "0m0s"))
	}
	return nil
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

// Lease claims a free box of pool for o.Holder for o.TTL, waiting up to
// o.Wait for one. When none is free it first resets the pool's expired
// leases. The box's token is stored in .boxes/secrets as apply stores it.
func (w *Workspace) Lease(ctx context.Context, pool string, o LeaseOptions) (LeaseRow, error) {
	p, err := w.pool(pool)
	if err != nil {
		return LeaseRow{}, err
	}
	if err := checkTTL(o.TTL); err != nil {
		return LeaseRow{}, err
	}
	start := time.Now()
	reaped := false
	for {
		if err := w.Observe(ctx, p.Host); err != nil {
			return LeaseRow{}, err
		}
		row, err := w.claim(ctx, p, o)
		var none *NoFreeBoxError
		if !errors.As(err, &none) {
			return row, err
		}
		if !reaped {
			reaped = true
			if n, err := w.reapPool(ctx, p, o); err != nil {
				return LeaseRow{}, err
			} else if n > 0 {
				continue
			}
		}
		if time.Since(start) >= o.Wait {
			none.Waited = o.Wait
			return LeaseRow{}, none
		}
		select {
		case <-ctx.Done():
			return LeaseRow{}, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// leasedRow is the row of a box just claimed or renewed: its token is read
// from its executor's container (the engine's copy is the one that counts:
// another working directory may have made the box) and stored here.
func (w *Workspace) leasedRow(ctx context.Context, p spec.Pool, r engine.Resources, l engine.Lease) (LeaseRow, error) {
	row := rowOfLease(p.Host, l, time.Now())
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

// rowOfLease is box l.Box's row as its lease tells it at now.
func rowOfLease(host string, l engine.Lease, now time.Time) LeaseRow {
	row := LeaseRow{Box: l.Box, Pool: l.Pool, Host: host, State: "free"}
	if l.Claim != nil {
		row.Holder, row.Lease = l.Claim.Holder, l.Claim.Lease
		row.Expires = l.Expires().UTC().Format(time.RFC3339)
		row.State = "leased"
		if l.ExpiredAt(now) {
			row.State = "expired"
		}
	}
	if l.Reset != nil {
		row.State = "resetting"
	}
	return row
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

// checkHolder refuses to act on box name's lease l for a caller that
// names another lease (id, from lease --json; "" names none), or on the
// claim an apply holds while it changes the box.
func checkHolder(name string, l engine.Lease, id string) error {
	if l.Claim != nil && l.Claim.By != "" {
		return fmt.Errorf("%s is held by the apply %s runs while it changes the box", name, l.Claim.By)
	}
	if id != "" && (l.Claim == nil || l.Claim.Lease != id) {
		return hint.Wrap(fmt.Errorf("lease %s of %s has ended: the box is not yours any more", id, name), "boxes lease claims a fresh box")
	}
	return nil
}

// Renew extends box name's lease to o.TTL from now. An expired lease is
// not renewed: it is the reaper's.
func (w *Workspace) Renew(ctx context.Context, name string, o LeaseOptions) (LeaseRow, error) {
	if err := checkTTL(o.TTL); err != nil {
		return LeaseRow{}, err
	}
	p, l, r, err := w.leaseOf(ctx, name)
	if err != nil {
		return LeaseRow{}, err
	}
	if err := checkHolder(name, l, o.Lease); err != nil {
		return LeaseRow{}, err
	}
	now := time.Now()
	switch {
	case l.Reset != nil:
		return LeaseRow{}, fmt.Errorf("%s is being reset: its lease has ended", name)
	case l.Claim == nil:
		return LeaseRow{}, hint.Wrap(fmt.Errorf("%s is not leased", name), "boxes lease %s claims a free box", p.Name)
	case l.ExpiredAt(now):
		return LeaseRow{}, hint.Wrap(fmt.Errorf("the lease of %s expired at %s: an expired lease is not renewed", name, l.Expires().UTC().Format(time.RFC3339)),
			"boxes lease %s claims a fresh box", p.Name)
	}
	e, err := w.Engine(ctx, p.Host)
	if err != nil {
		return LeaseRow{}, err
	}
	agent, _ := r.Container(compose.AgentService)
	m := engine.LeaseMark{Name: compose.LeaseName(name, engine.LeaseRenew, now.UnixNano()), Box: name, Fleet: w.Config.Fleet,
		Kind: engine.LeaseRenew, Pool: p.Name, Holder: l.Claim.Holder, Lease: l.Claim.Lease, Expires: now.Add(o.TTL).UTC().Truncate(time.Second)}
	if m.ID, err = e.CreateLeaseMark(ctx, agent.Image, m); err != nil {
		return LeaseRow{}, fmt.Errorf("renewing %s: %w", name, err)
	}
	l.Renewals = append(l.Renewals, m)
	return w.leasedRow(ctx, p, r, l)
}

// Release ends box name's lease: the box is deleted, with its data and
// token, and the pool made whole again (ResetPoolBox).
func (w *Workspace) Release(ctx context.Context, name string, o LeaseOptions) error {
	p, l, _, err := w.leaseOf(ctx, name)
	if err != nil {
		return err
	}
	if l.Claim == nil && l.Reset == nil {
		return hint.Wrap(fmt.Errorf("%s is not leased: nothing to release", name), "boxes leases lists the pools' boxes")
	}
	if err := checkHolder(name, l, o.Lease); err != nil {
		return err
	}
	return w.reset(ctx, p, l, o)
}
