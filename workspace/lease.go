package workspace

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
)

// The bounds of a lease's time to live, and the one it has unless asked.
const (
	MinLeaseTTL     = time.Minute
	MaxLeaseTTL     = 8 * time.Hour
	DefaultLeaseTTL = 30 * time.Minute
)

// reapGrace is how long after its expiry a lease is left before it is
// reaped: a renew refused at the expiry cannot then meet the reset.
const reapGrace = 5 * time.Second

// staleReset is how long a reset may run before anyone may take it over,
// when whether its process lives cannot be told (another machine's).
const staleReset = 15 * time.Minute

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

// claim claims the first ready free box of p as observed. When other
// claims take every box it tries, it looks at p's host again, once the
// engine lists them: a box come free meanwhile is tried, and a failure
// counts the boxes as the engine holds them once the claims failed (those
// just leased by others among them), not as it held them before.
func (w *Workspace) claim(ctx context.Context, p spec.Pool, o LeaseOptions) (LeaseRow, error) {
	e, err := w.Engine(ctx, p.Host)
	if err != nil {
		return LeaseRow{}, err
	}
	id, err := newLeaseID()
	if err != nil {
		return LeaseRow{}, err
	}
	// lost are the boxes whose claim another was first to: each is tried
	// once, so that this ends.
	lost := map[string]bool{}
	for {
		ready, none := w.poolBoxes(p, lost)
		if len(ready) == 0 {
			return LeaseRow{}, none
		}
		row, err := w.claimFirst(ctx, e, p, ready, id, o, lost)
		if !errors.Is(err, errClaimsLost) {
			return row, err
		}
		if err := w.observeClaims(ctx, p.Host, lost); err != nil {
			return LeaseRow{}, err
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

// poolBoxes are p's ready free boxes as last observed, the lowest numbers
// first, and the counts of the others for a lease that finds none. A box
// in lost counts as leased: the engine refused its claim.
func (w *Workspace) poolBoxes(p spec.Pool, lost map[string]bool) ([]string, *NoFreeBoxError) {
	obs := w.Observed[p.Host]
	leases := obs.Leases(w.Config.Fleet)
	none := &NoFreeBoxError{Pool: p.Name, Size: p.Size}
	var ready []string
	for _, b := range w.Config.Boxes {
		if b.Pool != p.Name {
			continue
		}
		switch r := obs.Of(b.Name); {
		case leases[b.Name].Held() || lost[b.Name]:
			none.Leased++
		case r.Empty():
			none.Absent++
		case !poolBoxReady(r):
			none.Unready++
		default:
			ready = append(ready, b.Name)
		}
	}
	// The lowest numbers first, as people count.
	sort.Slice(ready, func(i, j int) bool {
		a, _ := spec.PoolBoxNumber(p.Name, ready[i])
		b, _ := spec.PoolBoxNumber(p.Name, ready[j])
		return a < b
	})
	return ready, none
}

// claimFirst claims the first of ready, boxes of p on engine e, that it
// can, for lease id; a box another claimed first is added to lost.
func (w *Workspace) claimFirst(ctx context.Context, e Engine, p spec.Pool, ready []string, id string, o LeaseOptions, lost map[string]bool) (LeaseRow, error) {
	obs := w.Observed[p.Host]
	var lastErr error
	for _, name := range ready {
		r := obs.Of(name)
		agent, _ := r.Container(compose.AgentService)
		m := engine.LeaseMark{Name: compose.LeaseName(name, engine.LeaseClaim, 0), Box: name, Fleet: w.Config.Fleet,
			Kind: engine.LeaseClaim, Pool: p.Name, Holder: o.Holder, Lease: id, Expires: time.Now().Add(o.TTL).UTC().Truncate(time.Second)}
		markID, err := e.CreateLeaseMark(ctx, agent.Image, m)
		if errors.Is(err, engine.ErrLeaseTaken) {
			lost[name] = true // another claim was first
			continue
		}
		if err != nil {
			return LeaseRow{}, fmt.Errorf("claiming %s: %w", name, err)
		}
		m.ID = markID
		row, err := w.leasedRow(ctx, p, r, engine.Lease{Box: name, Pool: p.Name, Claim: &m})
		if err != nil {
			// The box seen is gone (reset since it was looked at), or its
			// token cannot be had: the claim is given up, and the next
			// box tried.
			if rerr := e.RemoveContainer(ctx, markID); rerr != nil {
				return LeaseRow{}, fmt.Errorf("claimed %s, but: %w; and giving the claim up failed: %v", name, err, rerr)
			}
			lastErr = fmt.Errorf("claiming %s: %w", name, err)
			continue
		}
		return row, nil
	}
	if lastErr != nil {
		return LeaseRow{}, lastErr
	}
	return LeaseRow{}, errClaimsLost
}

// poolBoxReady reports whether a pool box's containers all run: apply made
// it and waited for it, and nothing has stopped it since.
func poolBoxReady(r engine.Resources) bool {
	if _, ok := r.Container(compose.AgentService); !ok {
		return false
	}
	if _, ok := r.Container(compose.ExecutorService); !ok {
		return false
	}
	for _, c := range r.Containers {
		if c.State != engine.Running || c.Health == engine.Unhealthy {
			return false
		}
	}
	return true
}

func newLeaseID() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
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
	token, ok := w.engineToken(ctx, p.Host, r)
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

// ResetBusyError is a reset that another process runs, or whose lease
// changed since it was looked at: the box is left to that process, or to
// its new holder.
type ResetBusyError struct{ Box, Why string }

func (e *ResetBusyError) Error() string { return e.Box + " was not reset: " + e.Why }

// claimID is the engine ID of l's claim marker, "" when there is none.
func claimID(l engine.Lease) string {
	if l.Claim == nil {
		return ""
	}
	return l.Claim.ID
}

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
		if !resetStale(*l.Reset, time.Now()) {
			return &ResetBusyError{Box: l.Box, Why: fmt.Sprintf("%s is resetting it since %s", l.Reset.By, l.Reset.Started.Format(time.RFC3339))}
		}
		if err := e.RemoveContainer(ctx, l.Reset.ID); err != nil {
			return err
		}
	}
	image := w.Image()
	if agent, ok := w.Observed[p.Host].Of(l.Box).Container(compose.AgentService); ok {
		image = agent.Image
	}
	m := engine.LeaseMark{Name: compose.LeaseName(l.Box, engine.LeaseReset, 0), Box: l.Box, Fleet: w.Config.Fleet,
		Kind: engine.LeaseReset, Pool: p.Name, Started: time.Now().UTC(), By: thisProcess()}
	if m.ID, err = e.CreateLeaseMark(ctx, image, m); err != nil {
		if errors.Is(err, engine.ErrLeaseTaken) {
			return &ResetBusyError{Box: l.Box, Why: "another boxes is resetting it"}
		}
		return err
	}
	if err := w.Observe(ctx, p.Host); err != nil {
		return err
	}
	obs := w.Observed[p.Host]
	now := obs.Leases(w.Config.Fleet)[l.Box]
	if claimID(now) != claimID(l) {
		if err := e.RemoveContainer(ctx, m.ID); err != nil {
			return err
		}
		return &ResetBusyError{Box: l.Box, Why: "its lease changed since it was looked at"}
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

// resetStale reports whether reset m was cut short: its process, on this
// machine, is gone; or, on another, it began too long ago.
func resetStale(m engine.LeaseMark, now time.Time) bool {
	if here, dead := processHere(m); here {
		return dead
	}
	return now.Sub(m.Started) > staleReset
}

// thisProcess names this process as markers record it: PID@MACHINE.
func thisProcess() string {
	host, _ := os.Hostname()
	return strconv.Itoa(os.Getpid()) + "@" + host
}

// deadHere reports whether m's process ran on this machine and is gone.
func deadHere(m engine.LeaseMark) bool {
	here, dead := processHere(m)
	return here && dead
}

// processHere reports whether marker m's process (By, PID@MACHINE) ran on
// this machine, and then whether it is gone.
func processHere(m engine.LeaseMark) (here, dead bool) {
	pid, machine, ok := strings.Cut(m.By, "@")
	host, _ := os.Hostname()
	n, err := strconv.Atoi(pid)
	if !ok || err != nil || machine != host {
		return false, false
	}
	return true, syscall.Kill(n, 0) == syscall.ESRCH
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

// Leases lists the boxes of every pool with their leases, and every other
// pool box of the fleet the engines hold: leased ones of pools boxes.yaml
// no longer has, and free ones a plan deletes ("to delete"); with reap, it
// first resets the reapable leases (see reapable).
func (w *Workspace) Leases(ctx context.Context, reap bool, o LeaseOptions) ([]LeaseRow, error) {
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
	rows := []LeaseRow{}
	now := time.Now()
	listed := map[[2]string]bool{}
	for _, b := range w.Config.Boxes {
		if b.Pool == "" {
			continue
		}
		l := w.Observed[b.Host].Leases(w.Config.Fleet)[b.Name]
		l.Box, l.Pool = b.Name, b.Pool
		row := rowOfLease(b.Host, l, now)
		if r := w.Observed[b.Host].Of(b.Name); row.State == "free" && r.Empty() {
			row.State = "absent" // apply makes it
		} else if row.State == "free" && !poolBoxReady(r) {
			row.State = "not running"
		}
		rows = append(rows, row)
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
				rows = append(rows, rowOfLease(host, l, now))
				listed[[2]string{host, name}] = true
			}
		}
		for _, name := range o.Boxes() {
			r := o.Of(name)
			if pool := reconcile.PoolOf(r); pool != "" && !listed[[2]string{host, name}] && r.Owned(w.Config.Fleet) && r.HeldBy(w.Config.Fleet) == "" {
				rows = append(rows, LeaseRow{Box: name, Pool: pool, Host: host, State: "to delete"})
			}
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Box < rows[j].Box })
	return rows, nil
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

// guardPool claims, for the length of an apply, each free pool box p
// deletes or recreates, so that no lease takes it under the apply; a box
// leased since the plan was made is left out of it, with a warning. The
// returned func removes the claims. skip is a box a reset deletes, whose
// lease the reset holds.
func (w *Workspace) guardPool(ctx context.Context, p *reconcile.Plan, skip string) (*reconcile.Plan, func(), error) {
	type mark struct {
		e  Engine
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
		pool, ok := w.Config.PoolOf(b.Name)
		if !ok || pool.Host != b.Host || b.Name == skip || (b.Action != reconcile.Delete && b.Action != reconcile.Recreate) {
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
		now := time.Now().UTC()
		m := engine.LeaseMark{Name: compose.LeaseName(b.Name, engine.LeaseClaim, 0), Box: b.Name, Fleet: w.Config.Fleet,
			Kind: engine.LeaseClaim, Pool: pool.Name, Holder: "boxes apply", Lease: "apply", Expires: now.Add(MaxLeaseTTL),
			Started: now, By: thisProcess()}
		id, err := e.CreateLeaseMark(ctx, image, m)
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
