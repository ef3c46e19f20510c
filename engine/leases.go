package engine

import (
	"errors"
	"sort"
	"time"
)

// A pool box's lease lives on its engine, as never-started marker
// containers (see compose.LeaseLabel): a container name is taken at most
// once, so creating the claim's marker is the claim, atomic for every
// process and machine that reaches the engine.
//
//   - The claim: one per leased box, named by the box (compose.LeaseName).
//     It carries the holder, the lease's ID and its first expiry.
//   - A renewal: one per renew, with its new expiry; a lease expires at
//     the latest of its claim's and its renewals' expiries.
//   - The reset: made first and removed last by whoever deletes a leased
//     box, so that no one else starts the same reset, and nothing claims
//     or makes again a box whose old self is not yet gone.
//
// The protocol over these marks (who makes and removes each, and when; what
// a kill at each step leaves) is package pool's.
const (
	LeaseClaim = "claim"
	LeaseRenew = "renew"
	LeaseReset = "reset"
)

// ErrLeaseTaken is the refusal of a marker whose name is taken: the box is
// claimed (or being reset) by someone else.
var ErrLeaseTaken = errors.New("taken")

// LeaseMark is one lease marker container on an engine.
type LeaseMark struct {
	ID, Name string
	Box      string
	Fleet    string
	// Kind is LeaseClaim, LeaseRenew or LeaseReset.
	Kind   string
	Pool   string
	Holder string
	// Lease is the lease's ID, the same on its claim and renewals.
	Lease string
	// Expires is when the lease ends (a claim or renewal); zero for a reset.
	Expires time.Time
	// Started is when a reset began; By is who runs it (pid@machine).
	Started time.Time
	By      string
}

// Lease is a pool box's lease as its markers tell it.
type Lease struct {
	Box  string
	Pool string
	// Claim is the claim's marker; nil when the box is not leased.
	Claim *LeaseMark
	// Renewals are the renewals' markers.
	Renewals []LeaseMark
	// Reset is the reset's marker; nil unless one is under way (or was
	// cut short).
	Reset *LeaseMark
}

// Expires is when the lease ends: the latest expiry of its claim and renewals.
func (l Lease) Expires() time.Time {
	var t time.Time
	if l.Claim != nil {
		t = l.Claim.Expires
	}
	for _, r := range l.Renewals {
		if r.Lease == l.Claim.leaseID() && r.Expires.After(t) {
			t = r.Expires
		}
	}
	return t
}

func (m *LeaseMark) leaseID() string {
	if m == nil {
		return ""
	}
	return m.Lease
}

// Held reports whether anyone holds or is resetting the box: it is then
// neither free nor for a plan to recreate or delete.
func (l Lease) Held() bool { return l.Claim != nil || l.Reset != nil || len(l.Renewals) > 0 }

// ExpiredAt reports whether the lease has ended by now.
func (l Lease) ExpiredAt(now time.Time) bool {
	return l.Claim != nil && !now.Before(l.Expires())
}

// Marks are all of the lease's markers, the reset last.
func (l Lease) Marks() []LeaseMark {
	var out []LeaseMark
	if l.Claim != nil {
		out = append(out, *l.Claim)
	}
	out = append(out, l.Renewals...)
	if l.Reset != nil {
		out = append(out, *l.Reset)
	}
	return out
}

// Leases are the leases of the observed engine's boxes of fleet, by box.
func (o *Observed) Leases(fleet string) map[string]Lease {
	out := map[string]Lease{}
	for _, m := range o.LeaseMarks {
		if m.Fleet != fleet {
			continue
		}
		l := out[m.Box]
		l.Box = m.Box
		if m.Pool != "" {
			l.Pool = m.Pool
		}
		switch m.Kind {
		case LeaseClaim:
			l.Claim = &m
		case LeaseRenew:
			l.Renewals = append(l.Renewals, m)
		case LeaseReset:
			l.Reset = &m
		}
		out[m.Box] = l
	}
	for box, l := range out {
		sort.Slice(l.Renewals, func(i, j int) bool { return l.Renewals[i].Expires.Before(l.Renewals[j].Expires) })
		out[box] = l
	}
	return out
}
