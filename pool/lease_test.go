package pool

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
)

// t0 is the tests' now.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// claim is a holder's claim of box, lease id, expiring at expires.
func claim(box, id string, expires time.Time) *engine.LeaseMark {
	return &engine.LeaseMark{ID: "c-" + id, Name: compose.LeaseName(box, engine.LeaseClaim, 0), Box: box, Kind: engine.LeaseClaim,
		Pool: "scratch", Holder: "ci-" + id, Lease: id, Expires: expires}
}

// renewal is a renewal of lease id of box until expires.
func renewal(box, id string, expires time.Time) engine.LeaseMark {
	return engine.LeaseMark{ID: "r-" + id, Box: box, Kind: engine.LeaseRenew, Pool: "scratch", Holder: "ci-" + id, Lease: id, Expires: expires}
}

// reset is a reset of box begun at started by by.
func reset(box, by string, started time.Time) *engine.LeaseMark {
	return &engine.LeaseMark{ID: "x", Name: compose.LeaseName(box, engine.LeaseReset, 0), Box: box, Kind: engine.LeaseReset,
		Pool: "scratch", Started: started, By: by}
}

// running is a pool box's containers, all running with health h.
func running(box string, h engine.Health) engine.Resources {
	return engine.Resources{Containers: []engine.Container{
		{Box: box, Service: compose.AgentService, State: engine.Running, Health: h},
		{Box: box, Service: compose.ExecutorService, State: engine.Running, Health: h},
		{Box: box, Service: compose.GateService, State: engine.Running, Health: h},
	}}
}

func TestRowOf(t *testing.T) {
	const box = "scratch-1"
	later := t0.Add(10 * time.Minute)
	for _, tc := range []struct {
		name                 string
		l                    engine.Lease
		state, holder, lease string
		expires              time.Time
	}{
		{name: "no marks", l: engine.Lease{}, state: "free"},
		{name: "claimed", l: engine.Lease{Claim: claim(box, "a", later)}, state: "leased", holder: "ci-a", lease: "a", expires: later},
		{name: "claim expired", l: engine.Lease{Claim: claim(box, "a", t0)}, state: "expired", holder: "ci-a", lease: "a", expires: t0},
		{name: "renewed past the claim", l: engine.Lease{Claim: claim(box, "a", t0.Add(-time.Minute)), Renewals: []engine.LeaseMark{renewal(box, "a", later)}},
			state: "leased", holder: "ci-a", lease: "a", expires: later},
		{name: "another lease's renewal does not count", l: engine.Lease{Claim: claim(box, "a", t0.Add(-time.Minute)), Renewals: []engine.LeaseMark{renewal(box, "b", later)}},
			state: "expired", holder: "ci-a", lease: "a", expires: t0.Add(-time.Minute)},
		{name: "being reset, claim left", l: engine.Lease{Claim: claim(box, "a", later), Reset: reset(box, "1@m", t0)}, state: "resetting", holder: "ci-a", lease: "a", expires: later},
		{name: "being reset, claim gone", l: engine.Lease{Reset: reset(box, "1@m", t0)}, state: "resetting"},
		{name: "renewals alone", l: engine.Lease{Renewals: []engine.LeaseMark{renewal(box, "a", later)}}, state: "free"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.l.Box, tc.l.Pool = box, "scratch"
			row := RowOf("far", tc.l, t0)
			want := LeaseRow{Box: box, Pool: "scratch", Host: "far", State: tc.state, Holder: tc.holder, Lease: tc.lease}
			if !tc.expires.IsZero() {
				want.Expires = tc.expires.Format(time.RFC3339)
			}
			if row != want {
				t.Errorf("RowOf = %+v, want %+v", row, want)
			}
		})
	}
}

func TestBoxRow(t *testing.T) {
	const box = "scratch-2"
	stopped := running(box, engine.NoHealth)
	stopped.Containers[1].State = engine.Exited
	for _, tc := range []struct {
		name  string
		l     engine.Lease
		r     engine.Resources
		state string
	}{
		{"free and running", engine.Lease{}, running(box, engine.Healthy), "free"},
		{"free and not made", engine.Lease{}, engine.Resources{}, "absent"},
		{"free and stopped", engine.Lease{}, stopped, "not running"},
		{"free and unhealthy", engine.Lease{}, running(box, engine.Unhealthy), "not running"},
		{"leased and gone", engine.Lease{Claim: claim(box, "a", t0.Add(time.Hour))}, engine.Resources{}, "leased"},
		{"leased and stopped", engine.Lease{Claim: claim(box, "a", t0.Add(time.Hour))}, stopped, "leased"},
		{"resetting and gone", engine.Lease{Reset: reset(box, "1@m", t0)}, engine.Resources{}, "resetting"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.l.Box = box
			if got := BoxRow("", tc.l, tc.r, t0).State; got != tc.state {
				t.Errorf("state %q, want %q", got, tc.state)
			}
		})
	}
}

func TestCheckTTL(t *testing.T) {
	for _, tc := range []struct {
		ttl time.Duration
		ok  bool
	}{
		{0, false}, {59 * time.Second, false}, {MinTTL, true}, {DefaultTTL, true}, {MaxTTL, true}, {MaxTTL + time.Second, false}, {-time.Hour, false},
	} {
		err := CheckTTL(tc.ttl)
		if (err == nil) != tc.ok {
			t.Errorf("CheckTTL(%s) = %v, want ok %v", tc.ttl, err, tc.ok)
		}
		if err != nil {
			if h := hintOf(err); h != "a lease lasts from 1m0s to 8h" {
				t.Errorf("CheckTTL(%s)'s hint %q", tc.ttl, h)
			}
		}
	}
}

func TestNewLeaseID(t *testing.T) {
	a, err := NewLeaseID()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewLeaseID()
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(a) || a == b {
		t.Errorf("lease IDs %q and %q: want two different ones of 16 hex digits", a, b)
	}
}

func TestChecks(t *testing.T) {
	const box = "scratch-3"
	later := t0.Add(time.Hour)
	mine := engine.Lease{Box: box, Claim: claim(box, "a", later)}
	expired := engine.Lease{Box: box, Claim: claim(box, "a", t0.Add(-time.Second))}
	resetting := engine.Lease{Box: box, Claim: claim(box, "a", later), Reset: reset(box, "1@m", t0)}
	resetOnly := engine.Lease{Box: box, Reset: reset(box, "1@m", t0)}
	applying := engine.Lease{Box: box, Claim: &engine.LeaseMark{Kind: engine.LeaseClaim, Box: box, Lease: "apply", Expires: later, By: "7@m"}}
	none := engine.Lease{Box: box}

	// Each check's refusal, as a part of its message; "" lets it through.
	for _, tc := range []struct {
		name                    string
		l                       engine.Lease
		id                      string
		renew, release, inLease string
	}{
		{"own lease", mine, "a", "", "", ""},
		{"any lease", mine, "", "", "", ""},
		{"another's lease", mine, "b", "lease b of scratch-3 has ended", "lease b of scratch-3 has ended", "lease b of scratch-3 has ended"},
		{"expired", expired, "a", "an expired lease is not renewed", "", "lease a of scratch-3 expired at"},
		{"being reset", resetting, "a", "scratch-3 is being reset: its lease has ended", "", "scratch-3 is being reset: lease a has ended"},
		{"a reset alone", resetOnly, "", "scratch-3 is being reset", "", "scratch-3 is being reset"},
		{"a reset alone, a lease named", resetOnly, "a", "lease a of scratch-3 has ended", "lease a of scratch-3 has ended", "lease a of scratch-3 has ended"},
		{"an apply's claim", applying, "", "held by the apply 7@m runs", "held by the apply 7@m runs", "held by the apply 7@m runs"},
		{"not leased", none, "", "scratch-3 is not leased", "scratch-3 is not leased: nothing to release", ""},
		{"not leased, a lease named", none, "a", "lease a of scratch-3 has ended", "scratch-3 is not leased: nothing to release", "lease a of scratch-3 has ended"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range []struct {
				check string
				err   error
				want  string
			}{
				{"CheckRenew", CheckRenew(box, "scratch", tc.l, tc.id, t0), tc.renew},
				{"CheckRelease", CheckRelease(box, tc.l, tc.id), tc.release},
				{"CheckInLease", CheckInLease(box, tc.l, tc.id, t0), tc.inLease},
			} {
				switch {
				case c.want == "" && c.err != nil:
					t.Errorf("%s: %v, want none", c.check, c.err)
				case c.want != "" && (c.err == nil || !strings.Contains(c.err.Error(), c.want)):
					t.Errorf("%s: %v, want %q", c.check, c.err, c.want)
				}
			}
		})
	}
}

func TestCheckHolder(t *testing.T) {
	const box = "scratch-1"
	l := engine.Lease{Box: box, Claim: claim(box, "a", t0)}
	if err := CheckHolder(box, l, "a"); err != nil {
		t.Errorf("own lease: %v", err)
	}
	err := CheckHolder(box, l, "b")
	if err == nil || hintOf(err) != "boxes lease claims a fresh box" {
		t.Errorf("another's lease: %v (hint %q)", err, hintOf(err))
	}
	if err := CheckHolder(box, engine.Lease{Box: box}, ""); err != nil {
		t.Errorf("no lease named, none there: %v", err)
	}
}

func TestLeaseRowWriteText(t *testing.T) {
	var b bytes.Buffer
	LeaseRow{Box: "scratch-1", Pool: "scratch", Holder: "ci", Expires: "2025-03-01T12:30:00Z"}.WriteText(&b)
	if want := "box:      scratch-1\npool:     scratch\nholder:   ci\nexpires:  2025-03-01T12:30:00Z\n"; b.String() != want {
		t.Errorf("local, not reached:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	LeaseRow{Box: "scratch-1", Pool: "scratch", Host: "far", Holder: "ci", Expires: "2025-03-01T12:30:00Z", Executor: "http://127.0.0.1:4100", TokenFile: ".boxes/secrets/scratch-1.env"}.WriteText(&b)
	want := "box:      scratch-1\npool:     scratch\nhost:     far\nholder:   ci\nexpires:  2025-03-01T12:30:00Z\nexecutor: http://127.0.0.1:4100\ntoken:    .boxes/secrets/scratch-1.env\n"
	if b.String() != want {
		t.Errorf("on a host, reached:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestErrors(t *testing.T) {
	none := &NoFreeBoxError{Pool: "scratch", Size: 3, Leased: 2, Unready: 1, Absent: 0}
	if want := "pool scratch has no free box ready: 2 leased, 1 not running, 0 not made yet (it keeps 3 free)"; none.Error() != want {
		t.Errorf("%q, want %q", none.Error(), want)
	}
	none.Waited = 61*time.Second + 400*time.Millisecond
	if !strings.HasSuffix(none.Error(), "; waited 1m1s") {
		t.Errorf("after a wait: %q", none.Error())
	}
	if h := hintOf(none); !strings.Contains(h, "boxes lease --wait") {
		t.Errorf("hint %q", h)
	}
	var busy error = &ResetBusyError{Box: "scratch-1", Why: "another boxes is resetting it"}
	if busy.Error() != "scratch-1 was not reset: another boxes is resetting it" || !errors.As(busy, new(*ResetBusyError)) {
		t.Errorf("%v", busy)
	}
}

// hintOf is err's hint, "" for none.
func hintOf(err error) string {
	var h interface{ Hint() string }
	if errors.As(err, &h) {
		return h.Hint()
	}
	return ""
}
