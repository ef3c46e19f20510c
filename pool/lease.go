package pool

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/hint"
)

// The bounds of a lease's time to live, and the one it has unless asked.
const (
	MinTTL     = time.Minute
	MaxTTL     = 8 * time.Hour
	DefaultTTL = 30 * time.Minute
)

// LeaseOptions are what lease, renew, release and leases are asked.
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
	// Step reports what a reset or a reap does, in words.
	Step func(msg string)
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

// RowOf is box l.Box's row, on host, as its lease tells it at now: free
// with no claim, leased, expired once the latest expiry has passed, and
// resetting whenever a reset's mark is there.
func RowOf(host string, l engine.Lease, now time.Time) LeaseRow {
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

// BoxRow is the row of a pool box boxes.yaml counts, whose lease is l and
// whose resources are r: RowOf, with a free box that is not there absent
// (apply makes it) and one whose containers do not all run not running.
func BoxRow(host string, l engine.Lease, r engine.Resources, now time.Time) LeaseRow {
	row := RowOf(host, l, now)
	if row.State == "free" && r.Empty() {
		row.State = "absent"
	} else if row.State == "free" && !BoxReady(r) {
		row.State = "not running"
	}
	return row
}

// CheckTTL refuses a time to live out of bounds.
func CheckTTL(ttl time.Duration) error {
	if ttl < MinTTL || ttl > MaxTTL {
		return hint.Wrap(fmt.Errorf("--ttl %s is out of bounds", ttl), "a lease lasts from %s to %s", MinTTL, strings.TrimSuffix(MaxTTL.String(), "0m0s"))
	}
	return nil
}

// NewLeaseID is a fresh lease's ID, random: its claim and renewals carry
// it, and renew and release are given it to act on that lease alone.
func NewLeaseID() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// CheckHolder refuses to act on box name's lease l for a caller that
// names another lease (id, from lease --json; "" names none), or on the
// claim an apply holds while it changes the box.
func CheckHolder(name string, l engine.Lease, id string) error {
	if l.Claim != nil && l.Claim.By != "" {
		return fmt.Errorf("%s is held by the apply %s runs while it changes the box", name, l.Claim.By)
	}
	if id != "" && (l.Claim == nil || l.Claim.Lease != id) {
		return hint.Wrap(fmt.Errorf("lease %s of %s has ended: the box is not yours any more", id, name), "boxes lease claims a fresh box")
	}
	return nil
}

// CheckRenew refuses to renew box name's lease l, of pool, at now for the
// caller of lease id (CheckHolder): a lease being reset, none, or one
// expired (an expired lease is the reaper's, and is not renewed).
func CheckRenew(name, pool string, l engine.Lease, id string, now time.Time) error {
	if err := CheckHolder(name, l, id); err != nil {
		return err
	}
	switch {
	case l.Reset != nil:
		return fmt.Errorf("%s is being reset: its lease has ended", name)
	case l.Claim == nil:
		return hint.Wrap(fmt.Errorf("%s is not leased", name), "boxes lease %s claims a free box", pool)
	case l.ExpiredAt(now):
		return hint.Wrap(fmt.Errorf("the lease of %s expired at %s: an expired lease is not renewed", name, l.Expires().UTC().Format(time.RFC3339)),
			"boxes lease %s claims a fresh box", pool)
	}
	return nil
}

// CheckRelease refuses to release box name's lease l for the caller of
// lease id: a box with neither claim nor reset has nothing to release,
// and another's lease is not the caller's (CheckHolder). A reset under
// way may be released: the release finishes it, or leaves it to a live one.
func CheckRelease(name string, l engine.Lease, id string) error {
	if l.Claim == nil && l.Reset == nil {
		return hint.Wrap(fmt.Errorf("%s is not leased: nothing to release", name), "boxes leases lists the pools' boxes")
	}
	return CheckHolder(name, l, id)
}

// CheckInLease refuses to let a command work in box name under lease id
// at now when l, the box's lease as just observed, is not that lease
// (CheckHolder), is being reset, or has expired.
func CheckInLease(name string, l engine.Lease, id string, now time.Time) error {
	if err := CheckHolder(name, l, id); err != nil {
		return err
	}
	switch {
	case l.Reset != nil:
		return fmt.Errorf("%s is being reset: lease %s has ended", name, id)
	case l.ExpiredAt(now):
		return hint.Wrap(fmt.Errorf("lease %s of %s expired at %s: the box is not yours any more", id, name, l.Expires().UTC().Format(time.RFC3339)),
			"boxes lease claims a fresh box")
	}
	return nil
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

// ResetBusyError is a reset that another process runs, or whose lease
// changed since it was looked at: the box is left to that process, or to
// its new holder.
type ResetBusyError struct{ Box, Why string }

func (e *ResetBusyError) Error() string { return e.Box + " was not reset: " + e.Why }
