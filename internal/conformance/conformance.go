// Package conformance is one suite for the engine contract
// (engine.Engine): what boxes' workflows ask of an engine, and what they
// read back from it, checked through the contract's calls alone, so that
// every engine (Docker, the fake the command line's scripts run on, the
// next one) is held to the same behaviour. Only tests import it: each
// engine's tests call Run with a Harness of their own.
package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
)

// Fleet is the fleet of the suite's boxes.
const Fleet = "it-conf"

// The suite's boxes: Box is made, run, stopped, changed and removed;
// LeaseBox only ever has lease markers; Absent is never made (the calls
// made once the engine is gone name it).
const (
	Box      = "it-conf-box"
	LeaseBox = "it-conf-lease"
	Absent   = "it-conf-absent"
)

// Boxes are every box the suite names, for Harness.Cleanup.
var Boxes = []string{Box, LeaseBox, Absent}

// token is the bearer token the suite's boxes are made with.
const token = "conformance-token"

// Harness is how the suite reaches one kind of engine.
type Harness struct {
	// Engine connects a new engine; the suite closes it.
	Engine func(t *testing.T) engine.Engine
	// Image is the ID ("sha256:…") of an image the engine has: the suite's
	// boxes and lease markers are made of it.
	Image string
	// StopBehind stops every container of box as someone other than boxes
	// would (docker stop).
	StopBehind func(t *testing.T, box string)
	// RemoveBehind removes box's container of service as someone other
	// than boxes would (docker rm -f).
	RemoveBehind func(t *testing.T, box, service string)
	// Gone connects a second engine to the same resources, and returns
	// with it the function that makes that engine unreachable (stopped,
	// or its connection lost), which may be called while a call is under
	// way on it. Only the second engine is gone: the first still works.
	Gone func(t *testing.T) (engine.Engine, func())
	// Cleanup removes whatever is left of boxes (containers, networks,
	// volumes, lease markers) by other means than the contract, whatever
	// state a failed or killed run left them in. It runs before the suite
	// and after it, also on failure.
	Cleanup func(t *testing.T, boxes []string)
	// CallTimeout bounds each call the suite makes; 0 is 30 seconds.
	CallTimeout time.Duration
}

func (h Harness) callTimeout() time.Duration {
	if h.CallTimeout > 0 {
		return h.CallTimeout
	}
	return 30 * time.Second
}

// suite is one run of the suite on one engine.
type suite struct {
	h Harness
	e engine.Engine
	// dir holds the boxes.yaml the projects name (compose's labels).
	dir string
	// p is Box's project, made from Image with token.
	p *types.Project
}

// Run checks the engine h reaches, one subtest per part of the contract.
// The subtests share Box, and each first brings it to what it needs, so
// that one failing leaves the next able to run.
func Run(t *testing.T, h Harness) {
	if h.Engine == nil || h.Image == "" || h.StopBehind == nil || h.RemoveBehind == nil || h.Gone == nil || h.Cleanup == nil {
		t.Fatal("conformance: the harness needs Engine, Image, StopBehind, RemoveBehind, Gone and Cleanup")
	}
	h.Cleanup(t, Boxes)
	t.Cleanup(func() { h.Cleanup(t, Boxes) })
	s := &suite{h: h, e: h.Engine(t), dir: t.TempDir()}
	t.Cleanup(func() { s.e.Close() })
	// Runs first: what the contract itself can remove, it removes.
	t.Cleanup(func() { s.removeAll(t) })
	s.p = s.project(t, Box)

	t.Run("lifecycle", s.lifecycle)
	t.Run("drift", s.drift)
	t.Run("replace keeps /data", s.replace)
	t.Run("exec", s.exec)
	t.Run("volume streams", s.streams)
	t.Run("lease marks race", s.leases)
	t.Run("images", s.images)
	t.Run("engine gone", s.gone)
	t.Run("remove", s.remove)
}

// config is a boxes.yaml of fleet Fleet that declares box in state.
func (s *suite) config(t *testing.T, box string, state spec.State) *spec.Config {
	t.Helper()
	file := filepath.Join(s.dir, "boxes.yaml")
	data := fmt.Sprintf("version: 1\nfleet: %s\nboxes:\n  %s: {state: %s}\n", Fleet, box, state)
	if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := spec.Parse(file, []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// project is box's compose project as the applier makes it.
func (s *suite) project(t *testing.T, box string) *types.Project {
	t.Helper()
	cfg := s.config(t, box, spec.Running)
	p, err := compose.Project(compose.Input{Box: cfg.Boxes[0], Image: s.h.Image, Token: token, WorkDir: s.dir, ConfigFile: cfg.Path})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// ctx bounds one call.
func (s *suite) ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), s.h.callTimeout())
	t.Cleanup(cancel)
	return ctx
}

func (s *suite) observe(t *testing.T, images ...string) *engine.Observed {
	t.Helper()
	o, err := s.e.Observe(s.ctx(t), images...)
	if err != nil {
		t.Fatalf("Observe: %v", err)
	}
	return o
}

// containers are Box's containers by service, as observed.
func (s *suite) containers(t *testing.T) map[string]engine.Container {
	t.Helper()
	out := map[string]engine.Container{}
	for _, c := range s.observe(t).Of(Box).Containers {
		if _, dup := out[c.Service]; dup {
			t.Fatalf("two %s containers of %s observed", c.Service, Box)
		}
		out[c.Service] = c
	}
	return out
}

// up makes Box and starts it, as an apply does; it fails the test unless
// its three containers then run.
func (s *suite) up(t *testing.T) map[string]engine.Container {
	t.Helper()
	if err := s.e.Create(s.ctx(t), s.p, false); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if err := s.e.Start(s.ctx(t), s.p); err != nil {
		t.Fatalf("Start: %v", err)
	}
	cs := s.containers(t)
	for _, svc := range compose.Services {
		if c, ok := cs[svc]; !ok || c.State != "running" {
			t.Fatalf("after Create and Start, %s's %s container: %s", Box, svc, describe(c, ok))
		}
	}
	return cs
}

func describe(c engine.Container, ok bool) string {
	if !ok {
		return "missing"
	}
	return fmt.Sprintf("%s %.12s, state %q, exit code %d, health %q", c.Name, c.ID, c.State, c.ExitCode, c.Health)
}

// states checks that each of Box's containers is observed in state (all
// three there) and returns them.
func (s *suite) states(t *testing.T, state engine.State, when string) map[string]engine.Container {
	t.Helper()
	cs := s.containers(t)
	for _, svc := range compose.Services {
		if c, ok := cs[svc]; !ok || c.State != state {
			t.Errorf("%s, %s's %s container should be %s: %s", when, Box, svc, state, describe(c, ok))
		}
	}
	return cs
}

// plan is the planner's decision for Box, declared in state, on o.
func (s *suite) plan(t *testing.T, o *engine.Observed, state spec.State) reconcile.BoxPlan {
	t.Helper()
	p, err := reconcile.NewPlan(reconcile.Input{Config: s.config(t, Box, state), Image: s.h.Image,
		Observed: map[string]*engine.Observed{"": o}, Tokens: map[string]string{Box: token}})
	if err != nil {
		t.Fatalf("planning %s on what the engine shows: %v", Box, err)
	}
	for _, bp := range p.Boxes {
		if bp.Name == Box {
			return bp
		}
	}
	t.Fatalf("the plan has no line for %s", Box)
	return reconcile.BoxPlan{}
}

// wantPlan checks the planner's action for Box declared in state.
func (s *suite) wantPlan(t *testing.T, state spec.State, want reconcile.Action, when string) reconcile.BoxPlan {
	t.Helper()
	bp := s.plan(t, s.observe(t, s.h.Image), state)
	if bp.Action != want {
		t.Errorf("%s, a plan of %s declared %s says %s (%s); want %s", when, Box, state, bp.Action, reasons(bp), want)
	}
	return bp
}

func reasons(bp reconcile.BoxPlan) string {
	var out []string
	for _, r := range bp.Reasons {
		out = append(out, r.String())
	}
	if len(out) == 0 {
		return "no reason"
	}
	return strings.Join(out, "; ")
}

// lifecycle: a box's project made, started, stopped and started again is
// observed with its names, labels and states, as the planner reads them.
func (s *suite) lifecycle(t *testing.T) {
	if err := s.e.Create(s.ctx(t), s.p, false); err != nil {
		t.Fatalf("Create: %v", err)
	}
	o := s.observe(t, s.h.Image)
	r := o.Of(Box)
	cs := map[string]engine.Container{}
	for _, c := range r.Containers {
		cs[c.Service] = c
	}
	if len(r.Containers) != len(compose.Services) {
		t.Errorf("after Create, %d containers of %s observed; want %d (%s)", len(r.Containers), Box, len(compose.Services), strings.Join(compose.Services, ", "))
	}
	for _, svc := range compose.Services {
		c, ok := cs[svc]
		switch {
		case !ok:
			t.Errorf("after Create, %s's %s container is not observed", Box, svc)
			continue
		case c.Name != compose.ContainerName(Box, svc):
			t.Errorf("%s container named %q; want %q", svc, c.Name, compose.ContainerName(Box, svc))
		case c.Box != Box || c.Fleet != Fleet:
			t.Errorf("%s container labelled box %q, fleet %q; want %q, %q", svc, c.Box, c.Fleet, Box, Fleet)
		case c.State != "created":
			t.Errorf("after Create, the %s container is %q; want created (made, never started)", svc, c.State)
		case c.Image != s.h.Image:
			t.Errorf("%s container of image %q; want %q", svc, c.Image, s.h.Image)
		}
		nets := append([]string(nil), c.Networks...)
		sort.Strings(nets)
		want := append([]string(nil), compose.ServiceNetworks(Box, false, svc)...)
		sort.Strings(want)
		if strings.Join(nets, " ") != strings.Join(want, " ") {
			t.Errorf("%s container on networks %q; want %q", svc, nets, want)
		}
	}
	if agent, ok := cs[compose.AgentService]; ok && !mounts(agent, compose.VolumeName(Box, compose.AgentVolume), "/data") {
		t.Errorf("the agent container mounts %v; want volume %s at /data", agent.Mounts, compose.VolumeName(Box, compose.AgentVolume))
	}
	var nets, vols []string
	for _, n := range r.Networks {
		nets = append(nets, n.Name)
		if n.Fleet != Fleet || n.ID == "" {
			t.Errorf("network %s: fleet %q, ID %q; want fleet %q and an ID", n.Name, n.Fleet, n.ID, Fleet)
		}
	}
	for _, v := range r.Volumes {
		vols = append(vols, v.Name)
		if v.Fleet != Fleet {
			t.Errorf("volume %s labelled fleet %q; want %q", v.Name, v.Fleet, Fleet)
		}
	}
	sort.Strings(nets)
	sort.Strings(vols)
	if want := []string{compose.NetworkName(Box), compose.InsideNetworkName(Box)}; !sameSet(nets, want) {
		t.Errorf("%s's networks observed: %q; want %q", Box, nets, want)
	}
	if want := []string{compose.VolumeName(Box, compose.AgentVolume), compose.VolumeName(Box, compose.ExecutorVolume)}; !sameSet(vols, want) {
		t.Errorf("%s's volumes observed: %q; want %q", Box, vols, want)
	}
	if bp := s.plan(t, o, spec.Running); bp.Action != reconcile.Start {
		t.Errorf("a box created and never started is planned %s (%s); want start", bp.Action, reasons(bp))
	}
	if t.Failed() {
		t.FailNow()
	}

	if err := s.e.Start(s.ctx(t), s.p); err != nil {
		t.Fatalf("Start: %v", err)
	}
	started := s.states(t, engine.Running, "after Start")
	s.wantPlan(t, spec.Running, reconcile.NoOp, "once started")

	if err := s.e.Stop(s.ctx(t), s.p.Name); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	for svc, c := range s.states(t, engine.Exited, "after Stop") {
		if reconcile.Troubled(c) {
			t.Errorf("after Stop, the %s container reads as crashed (exit code %d); a stop must read as stopped", svc, c.ExitCode)
		}
		if c.ID != started[svc].ID {
			t.Errorf("Stop replaced the %s container (%.12s, was %.12s)", svc, c.ID, started[svc].ID)
		}
	}
	s.wantPlan(t, spec.Stopped, reconcile.NoOp, "once stopped")
	s.wantPlan(t, spec.Running, reconcile.Start, "once stopped")
	code, err := s.e.Exec(s.ctx(t), started[compose.AgentService].ID, engine.ExecOptions{Cmd: []string{"true"}})
	if err == nil {
		t.Errorf("Exec in a stopped container: exit code %d and no error; want an error", code)
	}

	if err := s.e.Start(s.ctx(t), s.p); err != nil {
		t.Fatalf("Start again: %v", err)
	}
	for svc, c := range s.states(t, engine.Running, "after a second Start") {
		if c.ID != started[svc].ID {
			t.Errorf("a second Start replaced the %s container (%.12s, was %.12s); it must start the one there", svc, c.ID, started[svc].ID)
		}
	}
	s.wantPlan(t, spec.Running, reconcile.NoOp, "once started again")
}

func mounts(c engine.Container, volume, dest string) bool {
	for _, m := range c.Mounts {
		if m.Volume == volume && m.Destination == dest {
			return true
		}
	}
	return false
}

func sameSet(a, b []string) bool {
	a, b = append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(a)
	sort.Strings(b)
	return strings.Join(a, "\x00") == strings.Join(b, "\x00")
}

// drift: containers stopped or removed behind boxes' back are observed as
// such, and planned as a start and a recreate.
func (s *suite) drift(t *testing.T) {
	before := s.up(t)
	s.h.StopBehind(t, Box)
	for svc, c := range s.states(t, engine.Exited, "stopped behind boxes' back") {
		if reconcile.Troubled(c) {
			t.Errorf("stopped behind boxes' back, the %s container reads as crashed (exit code %d); want stopped", svc, c.ExitCode)
		}
		if c.ID != before[svc].ID {
			t.Errorf("the %s container observed is %.12s; the one stopped was %.12s", svc, c.ID, before[svc].ID)
		}
	}
	s.wantPlan(t, spec.Running, reconcile.Start, "stopped behind boxes' back")

	before = s.up(t)
	s.h.RemoveBehind(t, Box, compose.GateService)
	cs := s.containers(t)
	if c, ok := cs[compose.GateService]; ok {
		t.Errorf("the gate container removed behind boxes' back is still observed: %s", describe(c, ok))
	}
	for _, svc := range []string{compose.AgentService, compose.ExecutorService} {
		if c, ok := cs[svc]; !ok || c.ID != before[svc].ID || c.State != "running" {
			t.Errorf("with the gate removed, the %s container should be observed as it was (%.12s, running): %s", svc, before[svc].ID, describe(c, ok))
		}
	}
	bp := s.wantPlan(t, spec.Running, reconcile.Recreate, "with the gate removed behind boxes' back")
	missing := false
	for _, r := range bp.Reasons {
		missing = missing || (r.Kind == "missing" && r.Service == compose.GateService)
	}
	if !missing {
		t.Errorf("the recreate's reasons (%s) do not say the gate is missing", reasons(bp))
	}
	s.up(t)
}

// replace: a file written into /data outlasts a Replace of the agent and a
// forced Create of the whole box: the data volume is kept.
func (s *suite) replace(t *testing.T) {
	before := s.up(t)
	content := []byte("written before the replace\n")
	s.copyTo(t, before[compose.AgentService].ID, tarOf(t, dirEntry("conformance"), fileEntry("conformance/keep", content)))

	if err := s.e.Replace(s.ctx(t), s.p, []string{compose.AgentService}); err != nil {
		t.Fatalf("Replace of the agent: %v", err)
	}
	cs := s.containers(t)
	agent, ok := cs[compose.AgentService]
	if !ok || agent.ID == before[compose.AgentService].ID {
		t.Fatalf("after Replace, the agent container should be a new one (was %.12s): %s", before[compose.AgentService].ID, describe(agent, ok))
	}
	if agent.State != "created" {
		t.Errorf("after Replace, the new agent container is %q; want created (Start starts it)", agent.State)
	}
	for _, svc := range []string{compose.ExecutorService, compose.GateService} {
		if c, ok := cs[svc]; !ok || c.ID != before[svc].ID || c.State != "running" {
			t.Errorf("Replace of the agent alone changed the %s container (was %.12s, running): %s", svc, before[svc].ID, describe(c, ok))
		}
	}
	if got := s.readFile(t, agent.ID, "/data/conformance/keep"); string(got) != string(content) {
		t.Errorf("after Replace, /data/conformance/keep holds %q; want %q", got, content)
	}

	if err := s.e.Create(s.ctx(t), s.p, true); err != nil {
		t.Fatalf("Create with force: %v", err)
	}
	forced := s.containers(t)
	for _, svc := range compose.Services {
		if c, ok := forced[svc]; !ok || c.ID == cs[svc].ID || c.State != "created" {
			t.Errorf("Create with force should replace the %s container (was %.12s) with one created, not started: %s", svc, cs[svc].ID, describe(c, ok))
		}
	}
	if got := s.readFile(t, forced[compose.AgentService].ID, "/data/conformance/keep"); string(got) != string(content) {
		t.Errorf("after Create with force, /data/conformance/keep holds %q; want %q", got, content)
	}
	now := s.up(t)
	code, out, _, err := s.run(t, now[compose.AgentService].ID, "cat", "/data/conformance/keep")
	if err != nil || code != 0 || out != string(content) {
		t.Errorf("cat /data/conformance/keep in the started box: exit code %d, %q, %v; want 0, %q", code, out, err, content)
	}
}

// run execs cmd in container id and returns its exit code and output.
func (s *suite) run(t *testing.T, id string, cmd ...string) (int, string, string, error) {
	t.Helper()
	var stdout, stderr strings.Builder
	code, err := s.e.Exec(s.ctx(t), id, engine.ExecOptions{Cmd: cmd, User: "root", Stdout: &stdout, Stderr: &stderr})
	return code, stdout.String(), stderr.String(), err
}

// exec: a command's exit code comes back as the code, whatever it is, and
// its stdout and stderr apart.
func (s *suite) exec(t *testing.T) {
	cs := s.up(t)
	agent := cs[compose.AgentService].ID
	hello := "hello from the conformance suite\n"
	s.copyTo(t, agent, tarOf(t, dirEntry("conformance"), fileEntry("conformance/hello", []byte(hello))))

	code, out, errOut, err := s.run(t, agent, "cat", "/data/conformance/hello", "/data/conformance/missing")
	switch {
	case err != nil:
		t.Errorf("Exec of a command that exits 1: %v; want exit code 1 and no error", err)
	case code != 1:
		t.Errorf("cat of a file and a missing one: exit code %d; want 1", code)
	case out != hello:
		t.Errorf("cat's stdout %q; want the file alone, %q", out, hello)
	case !strings.Contains(errOut, "/data/conformance/missing") || !strings.Contains(errOut, "No such file or directory"):
		t.Errorf("cat's stderr %q; want its complaint about /data/conformance/missing, apart from stdout", errOut)
	}
	for _, tc := range []struct {
		cmd  []string
		code int
	}{
		{[]string{"true"}, 0},
		{[]string{"false"}, 1},
		{[]string{"sh", "-c", "exit 3"}, 3},
		{[]string{"sh", "-c", "exit 125"}, 125},
	} {
		code, out, errOut, err := s.run(t, agent, tc.cmd...)
		if err != nil || code != tc.code {
			t.Errorf("Exec %q: exit code %d, error %v (stdout %q, stderr %q); want exit code %d and no error", tc.cmd, code, err, out, errOut, tc.code)
		}
	}
}

// streams: a tar copied into /data comes back out with the same bytes,
// modes and owners, whole directories and single files alike.
func (s *suite) streams(t *testing.T) {
	cs := s.up(t)
	agent := cs[compose.AgentService].ID
	blob := randomBytes(t, 300<<10)
	in := []entry{
		dirEntry("conformance"),
		{name: "conformance/stream", dir: true, mode: 0o755},
		{name: "conformance/stream/blob", data: blob, mode: 0o640, uid: 1000, gid: 1000},
		{name: "conformance/stream/empty", mode: 0o600},
		{name: "conformance/stream/sub", dir: true, mode: 0o700},
		{name: "conformance/stream/sub/note", data: []byte("a note\n"), mode: 0o644},
	}
	s.copyTo(t, agent, tarOf(t, in...))

	got := s.copyFrom(t, agent, "/data/conformance/stream")
	for _, want := range in[1:] {
		name := strings.TrimPrefix(want.name, "conformance/")
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("CopyFrom of /data/conformance/stream has no %s (it has %s)", name, names(got))
		case g.dir != want.dir:
			t.Errorf("%s came back a directory: %v; want %v", name, g.dir, want.dir)
		case string(g.data) != string(want.data):
			t.Errorf("%s came back with %d bytes that differ from the %d copied in", name, len(g.data), len(want.data))
		case g.mode.Perm() != want.mode.Perm():
			t.Errorf("%s came back with mode %v; want %v", name, g.mode.Perm(), want.mode.Perm())
		case g.uid != want.uid || g.gid != want.gid:
			t.Errorf("%s came back owned by %d:%d; want %d:%d (the tar's)", name, g.uid, g.gid, want.uid, want.gid)
		}
	}
	one := s.copyFrom(t, agent, "/data/conformance/stream/blob")
	if g, ok := one["blob"]; !ok || len(one) != 1 || string(g.data) != string(blob) {
		t.Errorf("CopyFrom of one file: %s; want blob alone, with its bytes", names(one))
	}
	if rc, err := s.e.CopyFrom(s.ctx(t), agent, "/data/conformance/nothing-here"); err == nil {
		rc.Close()
		t.Errorf("CopyFrom of a path that does not exist: no error")
	}
}

// leases: of concurrent creates of one lease marker, exactly one wins; the
// others are refused as taken; the marker is observed with what it says,
// apart from every box's resources, and gone once removed.
func (s *suite) leases(t *testing.T) {
	const racers = 8
	expires := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	name := compose.LeaseName(LeaseBox, engine.LeaseClaim, 0)
	mark := func(i int) engine.LeaseMark {
		return engine.LeaseMark{Name: name, Box: LeaseBox, Fleet: Fleet, Kind: engine.LeaseClaim, Pool: "it-conf-pool",
			Holder: fmt.Sprintf("holder-%d", i), Lease: fmt.Sprintf("lease-%d", i), Expires: expires}
	}
	type result struct {
		i   int
		id  string
		err error
	}
	results := make(chan result, racers)
	ctx := s.ctx(t)
	start := make(chan struct{})
	for i := range racers {
		go func() {
			<-start
			id, err := s.e.CreateLeaseMark(ctx, s.h.Image, mark(i))
			results <- result{i, id, err}
		}()
	}
	close(start)
	var won []result
	for range racers {
		r := <-results
		switch {
		case r.err == nil:
			won = append(won, r)
		case !errors.Is(r.err, engine.ErrLeaseTaken):
			t.Errorf("racer %d was refused with %v; want an error matching engine.ErrLeaseTaken", r.i, r.err)
		}
	}
	t.Cleanup(func() {
		for _, w := range won {
			_ = s.e.RemoveContainer(context.Background(), w.id)
		}
	})
	if len(won) != 1 {
		t.Fatalf("%d of %d concurrent CreateLeaseMark of %s won; want exactly 1", len(won), racers, name)
	}
	w, want := won[0], mark(won[0].i)
	if w.id == "" {
		t.Errorf("the winning CreateLeaseMark returned no ID")
	}
	o := s.observe(t)
	var seen []engine.LeaseMark
	for _, m := range o.LeaseMarks {
		if m.Name == name {
			seen = append(seen, m)
		}
	}
	if len(seen) != 1 {
		t.Fatalf("%d lease markers named %s observed; want 1", len(seen), name)
	}
	m := seen[0]
	if m.ID != w.id || m.Box != want.Box || m.Fleet != want.Fleet || m.Kind != want.Kind || m.Pool != want.Pool ||
		m.Holder != want.Holder || m.Lease != want.Lease || !m.Expires.Equal(want.Expires) {
		t.Errorf("the marker observed: %+v\nwant the winner's: %+v (ID %s)", m, want, w.id)
	}
	if r := o.Of(LeaseBox); !r.Empty() || o.Unmanaged.Containers[name] {
		t.Errorf("the lease marker is observed as a resource of its box or as another container (box: %s; unmanaged: %v)", r.Counts(), o.Unmanaged.Containers[name])
	}

	if err := s.e.RemoveContainer(s.ctx(t), w.id); err != nil {
		t.Fatalf("RemoveContainer of the marker: %v", err)
	}
	for _, m := range s.observe(t).LeaseMarks {
		if m.Name == name {
			t.Errorf("the removed marker is still observed: %+v", m)
		}
	}
	id, err := s.e.CreateLeaseMark(s.ctx(t), s.h.Image, mark(racers))
	if err != nil {
		t.Fatalf("CreateLeaseMark once the marker is removed: %v; the name is free again", err)
	}
	if err := s.e.RemoveContainer(s.ctx(t), id); err != nil {
		t.Errorf("RemoveContainer of the second marker: %v", err)
	}
}

// images: Observe says which of the images asked about the engine has.
func (s *suite) images(t *testing.T) {
	absent := "sha256:" + strings.Repeat("0", 63) + "1"
	o := s.observe(t, s.h.Image, absent)
	if !o.Images[s.h.Image] {
		t.Errorf("Observe says the engine lacks %s, which it has", s.h.Image)
	}
	if o.ImageSizes[s.h.Image] <= 0 {
		t.Errorf("Observe gives %s a size of %d bytes", s.h.Image, o.ImageSizes[s.h.Image])
	}
	if have, asked := o.Images[absent]; have || !asked {
		t.Errorf("Observe of an image the engine lacks: present %v, answered %v; want answered absent", have, asked)
	}
	if have, asked := s.observe(t).Images[s.h.Image]; have || asked {
		t.Errorf("Observe asked about no image answers for %s", s.h.Image)
	}
}
