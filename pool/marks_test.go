package pool

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
)

// deadPID is no process: beyond the largest pid_max Linux allows.
const deadPID = 1<<22 + 1

// here, gone and elsewhere name a process that lives on this machine, one
// gone from it, and one of another machine.
var (
	hostname, _ = os.Hostname()
	here        = strconv.Itoa(os.Getpid()) + "@" + hostname
	gone        = strconv.Itoa(deadPID) + "@" + hostname
	elsewhere   = strconv.Itoa(os.Getpid()) + "@not-" + hostname
)

func TestResetStale(t *testing.T) {
	for _, tc := range []struct {
		name    string
		by      string
		started time.Time
		stale   bool
	}{
		{"its process lives here", here, t0.Add(-time.Hour), false},
		{"its process is gone from here", gone, t0, true},
		{"another machine's, just begun", elsewhere, t0.Add(-time.Minute), false},
		{"another machine's, at the limit", elsewhere, t0.Add(-StaleReset), false},
		{"another machine's, too long ago", elsewhere, t0.Add(-StaleReset - time.Second), true},
		{"no process named, just begun", "", t0, false},
		{"no process named, long ago", "", t0.Add(-time.Hour), true},
		{"no machine named", strconv.Itoa(deadPID), t0, false},
		{"no PID", "x@" + hostname, t0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ResetStale(*reset("scratch-1", tc.by, tc.started), t0); got != tc.stale {
				t.Errorf("ResetStale = %v, want %v", got, tc.stale)
			}
		})
	}
}

func TestReapable(t *testing.T) {
	const box = "scratch-1"
	apply := func(by string, expires time.Time) *engine.LeaseMark {
		return &engine.LeaseMark{Kind: engine.LeaseClaim, Box: box, Holder: "boxes apply", Lease: "apply", Expires: expires, Started: t0, By: by}
	}
	later := t0.Add(time.Hour)
	for _, tc := range []struct {
		name string
		l    engine.Lease
		// why is a part of the reason; "" when not reapable.
		why string
	}{
		{"leased", engine.Lease{Claim: claim(box, "a", later)}, ""},
		{"expired, within the grace", engine.Lease{Claim: claim(box, "a", t0.Add(-ReapGrace+time.Second))}, ""},
		{"expired, the grace just over", engine.Lease{Claim: claim(box, "a", t0.Add(-ReapGrace))}, "expired at"},
		{"expired, past the grace", engine.Lease{Claim: claim(box, "a", t0.Add(-ReapGrace-time.Second))}, `the lease of scratch-1 (holder "ci-a") expired at `},
		{"renewed past its claim", engine.Lease{Claim: claim(box, "a", t0.Add(-time.Hour)), Renewals: []engine.LeaseMark{renewal(box, "a", later)}}, ""},
		{"renewed, and that expired", engine.Lease{Claim: claim(box, "a", t0.Add(-time.Hour)), Renewals: []engine.LeaseMark{renewal(box, "a", t0.Add(-time.Minute))}}, "expired at"},
		{"an apply's claim, its process here", engine.Lease{Claim: apply(here, later)}, ""},
		{"an apply's claim, its process gone", engine.Lease{Claim: apply(gone, later)}, "the apply that held it is gone"},
		{"an apply's claim, another machine's", engine.Lease{Claim: apply(elsewhere, later)}, ""},
		{"an apply's claim, another machine's, expired", engine.Lease{Claim: apply(elsewhere, t0.Add(-ReapGrace-time.Second))}, "the apply that held it is gone"},
		{"an apply's claim, its process here, expired", engine.Lease{Claim: apply(here, t0.Add(-ReapGrace-time.Second))}, "the apply that held it is gone"},
		{"a reset running here", engine.Lease{Reset: reset(box, here, t0.Add(-time.Hour))}, ""},
		{"a reset cut short here", engine.Lease{Reset: reset(box, gone, t0)}, "the reset of scratch-1 by " + gone + " was cut short"},
		{"a reset on another machine, recent", engine.Lease{Reset: reset(box, elsewhere, t0.Add(-time.Minute))}, ""},
		{"a reset on another machine, stale", engine.Lease{Reset: reset(box, elsewhere, t0.Add(-StaleReset-time.Minute))}, "was cut short"},
		{"a reset running, its claim left", engine.Lease{Claim: claim(box, "a", later), Reset: reset(box, here, t0)}, ""},
		// An expired claim is the reaper's whoever resets it: the reset
		// itself then finds the reset running and leaves it.
		{"a reset running, its claim expired", engine.Lease{Claim: claim(box, "a", t0.Add(-time.Hour)), Reset: reset(box, here, t0)}, "expired at"},
		{"renewals alone", engine.Lease{Renewals: []engine.LeaseMark{renewal(box, "a", later)}}, "scratch-1 has renewals of a lease released half-way"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.l.Box = box
			got := Reapable(tc.l, t0)
			if (got == "") != (tc.why == "") || !strings.Contains(got, tc.why) {
				t.Errorf("Reapable = %q, want %q", got, tc.why)
			}
		})
	}
}

func TestMarks(t *testing.T) {
	now := time.Date(2025, 3, 1, 13, 0, 0, 500, time.FixedZone("CET", 3600))
	c := ClaimMark("f", "scratch", "scratch-1", "ci", "id1", now, 30*time.Minute)
	want := engine.LeaseMark{Name: compose.LeaseName("scratch-1", engine.LeaseClaim, 0), Box: "scratch-1", Fleet: "f", Kind: engine.LeaseClaim,
		Pool: "scratch", Holder: "ci", Lease: "id1", Expires: time.Date(2025, 3, 1, 12, 30, 0, 0, time.UTC)}
	if c != want {
		t.Errorf("ClaimMark = %+v, want %+v", c, want)
	}

	l := engine.Lease{Box: "scratch-1", Pool: "scratch", Claim: &c}
	r := RenewMark("f", "scratch", l, now, time.Hour)
	want = engine.LeaseMark{Name: compose.LeaseName("scratch-1", engine.LeaseRenew, now.UnixNano()), Box: "scratch-1", Fleet: "f", Kind: engine.LeaseRenew,
		Pool: "scratch", Holder: "ci", Lease: "id1", Expires: time.Date(2025, 3, 1, 13, 0, 0, 0, time.UTC)}
	if r != want {
		t.Errorf("RenewMark = %+v, want %+v", r, want)
	}
	l.Renewals = append(l.Renewals, r)
	if !l.Expires().Equal(r.Expires) {
		t.Errorf("a renewed lease expires at %s, want the renewal's %s", l.Expires(), r.Expires)
	}

	x := ResetMark("f", "scratch", "scratch-1", now)
	want = engine.LeaseMark{Name: compose.LeaseName("scratch-1", engine.LeaseReset, 0), Box: "scratch-1", Fleet: "f", Kind: engine.LeaseReset,
		Pool: "scratch", Started: now.UTC(), By: here}
	if x != want {
		t.Errorf("ResetMark = %+v, want %+v", x, want)
	}

	a := ApplyMark("f", "scratch", "scratch-1", now)
	want = engine.LeaseMark{Name: c.Name, Box: "scratch-1", Fleet: "f", Kind: engine.LeaseClaim, Pool: "scratch",
		Holder: "boxes apply", Lease: "apply", Expires: now.UTC().Add(MaxTTL), Started: now.UTC(), By: here}
	if a != want {
		t.Errorf("ApplyMark = %+v, want %+v", a, want)
	}
	// An apply's claim is the box's one claim: no lease takes the box under it.
	if a.Name != c.Name {
		t.Errorf("an apply's claim is named %q, a holder's %q", a.Name, c.Name)
	}
	if err := CheckHolder("scratch-1", engine.Lease{Claim: &a}, ""); err == nil {
		t.Error("CheckHolder lets a holder act on an apply's claim")
	}

	if ThisProcess() != here {
		t.Errorf("ThisProcess = %q, want %q", ThisProcess(), here)
	}
}

func TestClaimID(t *testing.T) {
	if id := ClaimID(engine.Lease{}); id != "" {
		t.Errorf("no claim: %q", id)
	}
	if id := ClaimID(engine.Lease{Claim: &engine.LeaseMark{ID: "abc"}, Reset: &engine.LeaseMark{ID: "def"}}); id != "abc" {
		t.Errorf("claim abc: %q", id)
	}
}
