package pool

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
)

// StaleReset is how long a reset may run before anyone may take it over,
// when whether its process lives cannot be told (another machine's).
const StaleReset = 15 * time.Minute

// ReapGrace is how long after its expiry a lease is left before it is
// reaped: a renew refused at the expiry cannot then meet the reset.
const ReapGrace = 5 * time.Second

// ClaimMark is the claim of box of pool, in fleet, for lease id held by
// holder, made at now for ttl (its expiry to the second). Its name is the
// box's one claim name: making it is the claim.
func ClaimMark(fleet, pool, box, holder, id string, now time.Time, ttl time.Duration) engine.LeaseMark {
	return engine.LeaseMark{Name: compose.LeaseName(box, engine.LeaseClaim, 0), Box: box, Fleet: fleet,
		Kind: engine.LeaseClaim, Pool: pool, Holder: holder, Lease: id, Expires: now.Add(ttl).UTC().Truncate(time.Second)}
}

// RenewMark is a renewal of lease l of box l.Box, of pool in fleet, made
// at now for ttl: the claim's holder and lease ID, a later expiry, and a
// name of its own (the time it was made).
func RenewMark(fleet, pool string, l engine.Lease, now time.Time, ttl time.Duration) engine.LeaseMark {
	return engine.LeaseMark{Name: compose.LeaseName(l.Box, engine.LeaseRenew, now.UnixNano()), Box: l.Box, Fleet: fleet,
		Kind: engine.LeaseRenew, Pool: pool, Holder: l.Claim.Holder, Lease: l.Claim.Lease, Expires: now.Add(ttl).UTC().Truncate(time.Second)}
}

// ResetMark is the reset of box of pool in fleet, begun at now by this
// process. Its name is the box's one reset name: making it is what lets
// one reset alone run on the box.
func ResetMark(fleet, pool, box string, now time.Time) engine.LeaseMark {
	return engine.LeaseMark{Name: compose.LeaseName(box, engine.LeaseReset, 0), Box: box, Fleet: fleet,
		Kind: engine.LeaseReset, Pool: pool, Started: now.UTC(), By: ThisProcess()}
}

// ApplyMark is the claim an apply of this process, begun at now, makes on
// free box of pool in fleet that it deletes or recreates, so that no lease
// takes the box under it. It is told from a holder's claim by its By (see
// CheckHolder and Reapable), and lasts MaxTTL should its removal be lost.
// A reset's own apply makes none on the box it resets: the reset's mark
// holds it.
func ApplyMark(fleet, pool, box string, now time.Time) engine.LeaseMark {
	now = now.UTC()
	return engine.LeaseMark{Name: compose.LeaseName(box, engine.LeaseClaim, 0), Box: box, Fleet: fleet,
		Kind: engine.LeaseClaim, Pool: pool, Holder: "boxes apply", Lease: "apply", Expires: now.Add(MaxTTL),
		Started: now, By: ThisProcess()}
}

// ClaimID is the engine ID of l's claim mark, "" when there is none: a
// reset compares it before and after its own mark is made, to leave a
// box someone leased anew meanwhile.
func ClaimID(l engine.Lease) string {
	if l.Claim == nil {
		return ""
	}
	return l.Claim.ID
}

// Reapable says why lease l is for the reaper to reset at now: expired,
// a reset or an apply's claim cut short, or renewals left of a lease
// released half-way; "" when it is not.
func Reapable(l engine.Lease, now time.Time) string {
	switch {
	case l.Claim != nil && l.Claim.By != "":
		// An apply's claim (see ApplyMark): its apply died on this machine.
		if deadHere(*l.Claim) || l.ExpiredAt(now.Add(-ReapGrace)) {
			return "the apply that held it is gone"
		}
	case l.Claim != nil && l.ExpiredAt(now.Add(-ReapGrace)):
		return fmt.Sprintf("the lease of %s (holder %q) expired at %s", l.Box, l.Claim.Holder, l.Expires().UTC().Format(time.RFC3339))
	case l.Reset != nil && ResetStale(*l.Reset, now):
		return fmt.Sprintf("the reset of %s by %s was cut short", l.Box, l.Reset.By)
	case l.Claim == nil && l.Reset == nil:
		return fmt.Sprintf("%s has renewals of a lease released half-way", l.Box)
	}
	return ""
}

// ResetStale reports whether reset m was cut short: its process, on this
// machine, is gone; or, on another, it began more than StaleReset ago.
func ResetStale(m engine.LeaseMark, now time.Time) bool {
	if here, dead := processHere(m); here {
		return dead
	}
	return now.Sub(m.Started) > StaleReset
}

// ThisProcess names this process as marks record it: PID@MACHINE.
func ThisProcess() string {
	host, _ := os.Hostname()
	return strconv.Itoa(os.Getpid()) + "@" + host
}

// deadHere reports whether m's process ran on this machine and is gone.
func deadHere(m engine.LeaseMark) bool {
	here, dead := processHere(m)
	return here && dead
}

// processHere reports whether mark m's process (By, PID@MACHINE) ran on
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
