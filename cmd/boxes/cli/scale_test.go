package cli_test

// A fleet simulated on fake engines (internal/fakeengine, its state kept in
// memory): as many hosts and boxes as boxes is meant to keep, with no Docker
// engine. TestFleetCallsPerHost checks here that a plan asks each host the
// same whatever its number of boxes; BenchmarkFleet times and weighs plans
// and applies of such fleets.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hermes-box/boxes/cmd/boxes/cli"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/fakeengine"
	"github.com/hermes-box/boxes/pool"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/workspace"
)

// simImage is the locked image every simulated host has.
var simImage = "sha256:" + strings.Repeat("5a", 32)

// simShape is the form of a simulated fleet; grow gives it its size.
type simShape struct {
	Hosts int // h00, h01, …
	Pools int // pool0, pool1, … on the first hosts, one each
	// Spare are hosts left without drift, to be taken down without losing
	// a change.
	Spare []string
}

// simFleet is a fleet made on fake engines: applied, a quarter of its
// pool boxes leased, then a tenth of its declared boxes drifted: half of
// them by a changed setting (recreate), two fifths stopped behind boxes'
// back (start), a tenth with a crashed executor, none on the spare hosts.
type simFleet struct {
	tb      testing.TB
	shape   simShape
	latency map[string]time.Duration
	dir     string
	conn    *fakeengine.Connector
	hosts   []string
	// boxes are the declared boxes by name, in order; host their hosts.
	boxes []string
	host  map[string]string
	// settings are each declared box's line as made, and changed those
	// boxes.yaml now says differently.
	settings map[string]string
	changed  map[string]string
	// drifted are the declared boxes the plan changes, in order.
	drifted []string
	// Each pool's boxes, and how many of them are leased.
	perPool, leased int
}

// newSimFleet makes an empty fleet of shape whose engines answer with
// latency: every call to a host's engine takes latency[host].
func newSimFleet(tb testing.TB, shape simShape, latency map[string]time.Duration) *simFleet {
	tb.Helper()
	f := &simFleet{tb: tb, shape: shape, latency: latency, dir: tb.TempDir(), host: map[string]string{},
		settings: map[string]string{}, changed: map[string]string{}}
	for i := range shape.Hosts {
		f.hosts = append(f.hosts, fmt.Sprintf("h%02d", i))
	}
	f.conn = &fakeengine.Connector{Latency: latency}
	err := f.conn.Edit(func(s *fakeengine.State) error {
		for _, h := range append([]string{""}, f.hosts...) {
			s.AddImage(h, simImage)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	lock := fmt.Sprintf("version: 1\nimage:\n  id: %s\n", simImage)
	if err := os.WriteFile(filepath.Join(f.dir, "boxes.lock"), []byte(lock), 0o644); err != nil {
		tb.Fatal(err)
	}
	return f
}

// grow makes the fleet n boxes in all (declared by name, and the pools'
// boxes, a tenth of them), on engines that answer at once meanwhile: the
// boxes a smaller fleet drifted are put right, the new ones made, more
// pool boxes leased, and a tenth of the declared boxes drifted anew.
func (f *simFleet) grow(n int) {
	f.tb.Helper()
	f.conn.Latency, f.conn.Down = nil, nil
	perPool := 0
	if f.shape.Pools > 0 {
		perPool = max(1, n/10/f.shape.Pools)
	}
	for i := len(f.boxes); i < n-f.shape.Pools*perPool; i++ {
		name := fmt.Sprintf("b%05d", i)
		host := f.hosts[i%len(f.hosts)]
		f.boxes = append(f.boxes, name)
		f.host[name] = host
		settings := []string{"host: " + host}
		if i%3 == 0 {
			settings = append(settings, "memory: 2GiB")
		}
		if i%5 == 0 {
			settings = append(settings, `egress: [api.anthropic.com, "*.github.com"]`)
		}
		if i%7 == 0 {
			settings = append(settings, "env: {TZ: UTC}")
		}
		f.settings[name] = strings.Join(settings, ", ")
	}
	// Leased pool boxes are not free: the pools keep the rest.
	f.changed, f.drifted = map[string]string{}, nil
	f.perPool = perPool
	f.write(perPool - f.leased)

	// Made as boxes apply makes them, in one workspace, but with the boxes'
	// locks taken as held: boxes apply looks at the host under each new
	// box's lock, which for thousands of boxes is most of the time the
	// making takes. Then pool boxes leased, in the same workspace (a boxes
	// lease each would read boxes.yaml each time).
	ctx := context.Background()
	ws, err := workspace.Open(f.file(), workspace.Options{Connect: f.kinds()})
	if err != nil {
		f.tb.Fatal(err)
	}
	defer ws.Close()
	p, err := ws.Plan(ctx, reconcile.PlanOptions{})
	if err != nil {
		f.tb.Fatal(err)
	}
	held := map[string]bool{}
	for _, bp := range p.Boxes {
		held[bp.Name] = true
	}
	if err := ws.Apply(ctx, p, workspace.ApplyOptions{Parallelism: 16, Held: held}); err != nil {
		f.tb.Fatal(err)
	}
	for ; f.leased < perPool/4; f.leased++ {
		for p := range f.shape.Pools {
			if _, err := ws.Lease(ctx, fmt.Sprintf("pool%d", p), workspace.LeaseOptions{LeaseOptions: pool.LeaseOptions{Holder: "sim", TTL: 8 * time.Hour}}); err != nil {
				f.tb.Fatal(err)
			}
		}
	}

	// The drift: evenly through the declared boxes off the spare hosts.
	spare := map[string]bool{}
	for _, h := range f.shape.Spare {
		spare[h] = true
	}
	var candidates []string
	for _, name := range f.boxes {
		if !spare[f.host[name]] {
			candidates = append(candidates, name)
		}
	}
	drift := n / 10
	err = f.conn.Edit(func(s *fakeengine.State) error {
		for j := range drift {
			name := candidates[j*len(candidates)/drift]
			f.drifted = append(f.drifted, name)
			// The fake looks for a box through every container of every
			// host: it is shown the box's host alone.
			h := f.host[name]
			on := &fakeengine.State{Hosts: map[string]*fakeengine.Host{h: s.Hosts[h]}}
			var err error
			switch j % 10 {
			case 0, 1, 2, 3, 4:
				f.changed[name] = "memory: 3GiB, host: " + h
			case 5, 6, 7, 8:
				err = on.StopBehind(name)
			case 9:
				err = on.Crash(name, "executor", 1)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		f.tb.Fatal(err)
	}
	f.write(perPool - f.leased)
	f.conn.Latency = f.latency
	f.conn.ResetCalls()
}

// kinds reach every host of the fleet through its fake engines.
func (f *simFleet) kinds() workspace.Kinds {
	return workspace.Kinds{spec.HostDocker: f.conn}
}

func (f *simFleet) file() string { return filepath.Join(f.dir, "boxes.yaml") }

// write writes boxes.yaml: every host, the pools keeping free boxes free,
// and the declared boxes, with their settings as changed.
func (f *simFleet) write(free int) {
	f.tb.Helper()
	var sb strings.Builder
	sb.WriteString("version: 1\nfleet: sim\nhosts:\n")
	for i, h := range f.hosts {
		// Addresses of TEST-NET-1 and -2, which name no real machine.
		fmt.Fprintf(&sb, "  %s: {docker: \"ssh://sim@192.0.%d.%d\"}\n", h, 2+i/250*49, 1+i%250)
	}
	if f.shape.Pools > 0 {
		sb.WriteString("pools:\n")
		for p := range f.shape.Pools {
			fmt.Fprintf(&sb, "  pool%d: {size: %d, host: %s, memory: 2GiB}\n", p, free, f.hosts[p%len(f.hosts)])
		}
	}
	sb.WriteString("boxes:\n")
	for _, name := range f.boxes {
		s := f.settings[name]
		if c, ok := f.changed[name]; ok {
			s = c
		}
		fmt.Fprintf(&sb, "  %s: {%s}\n", name, s)
	}
	if err := os.WriteFile(f.file(), []byte(sb.String()), 0o644); err != nil {
		f.tb.Fatal(err)
	}
}

// run runs boxes with args on the fleet, fails unless it exits 0, and
// returns how long it took and what it printed.
func (f *simFleet) run(args ...string) (time.Duration, string) {
	f.tb.Helper()
	var out, errb bytes.Buffer
	start := time.Now()
	fake := cli.Connectors{spec.HostDocker: func() engine.Connector { return f.conn }}
	code := cli.MainOn(cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, append([]string{"-f", f.file()}, args...), fake)
	took := time.Since(start)
	if code != 0 {
		f.tb.Fatalf("boxes %s: exit %d\n%s\n%s", strings.Join(args, " "), code, tail(out.String()), tail(errb.String()))
	}
	return took, out.String()
}

// tail is the last lines of a long output.
func tail(s string) string {
	lines := strings.Split(s, "\n")
	if len(lines) > 40 {
		lines = append([]string{"…"}, lines[len(lines)-40:]...)
	}
	return strings.Join(lines, "\n")
}

// planCalls is the calls one boxes plan makes to each host's engine.
func (f *simFleet) planCalls() map[string]map[string]int64 {
	f.tb.Helper()
	f.conn.ResetCalls()
	f.run("plan")
	return f.conn.Calls()
}

// totalCalls is the number of calls in calls.
func totalCalls(calls map[string]int64) int64 {
	var n int64
	for _, c := range calls {
		n += c
	}
	return n
}

// callsText is calls as "Connect 1, Observe 1", in name order.
func callsText(calls map[string]int64) string {
	names := make([]string, 0, len(calls))
	for name := range calls {
		names = append(names, name)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%s %d", name, calls[name])
	}
	return strings.Join(parts, ", ")
}

// TestFleetCallsPerHost: a plan makes the same calls to each host's engine
// whether the fleet has 10, 100 or 1,000 boxes (declared, pooled, leased,
// drifted): what it needs of the boxes comes from one look at each host.
func TestFleetCallsPerHost(t *testing.T) {
	var first map[string]map[string]int64
	f := newSimFleet(t, simShape{Hosts: 5, Pools: 2}, nil)
	for _, n := range []int{10, 100, 1000} {
		f.grow(n)
		calls := f.planCalls()
		if first == nil {
			first = calls
			continue
		}
		for _, h := range append([]string{""}, f.hosts...) {
			if got, want := callsText(calls[h]), callsText(first[h]); got != want {
				t.Errorf("%d boxes: plan's calls to host %q: %s; with 10 boxes: %s", n, h, got, want)
			}
		}
	}
}
