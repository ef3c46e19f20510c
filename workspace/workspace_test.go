package workspace_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/statedir"
	"github.com/hermes-box/boxes/workspace"
)

const config = `version: 1
boxes:
  alpha: {}
  gamma:
    host: nexus
hosts:
  nexus: {docker: "ssh://me@nexus"}
  zulu: {docker: "ssh://me@zulu"}
`

// fakeEngine serves a fixed snapshot and notes whether it was observed.
// What a test does not give it panics (the nil engine.Engine).
type fakeEngine struct {
	engine.Engine
	obs      *engine.Observed
	observed *[]string
	mu       *sync.Mutex
	host, id string
	before   func()
}

func (f *fakeEngine) Observe(context.Context, ...string) (*engine.Observed, error) {
	if f.before != nil {
		f.before()
	}
	f.mu.Lock()
	*f.observed = append(*f.observed, f.host)
	f.mu.Unlock()
	if f.obs == nil {
		return nil, errors.New(f.host + " is unreachable")
	}
	return f.obs, nil
}
func (f *fakeEngine) Capabilities() engine.Capabilities {
	return engine.Capabilities{Freeze: true, Rename: true}
}
func (f *fakeEngine) VolumeSizes(context.Context, *engine.Observed, []string) map[string]engine.VolumeSize {
	return nil
}
func (f *fakeEngine) ContainerEnv(context.Context, string) ([]string, error) {
	return nil, nil
}
func (f *fakeEngine) ContainerRuntime(context.Context, string) (string, error) {
	return "runc", nil
}

// MachineAddresses: the fake engine runs on a machine with no public address.
func (f *fakeEngine) MachineAddresses() []netip.Addr { return nil }

func (f *fakeEngine) ExecutorReach(bind string, port int) engine.Reach {
	return engine.Reach{How: engine.ReachDirect, URL: reconcile.ExecutorURL(bind, port)}
}
func (f *fakeEngine) ID() string { return f.id }
func (f *fakeEngine) SameEngineAs(first string) error {
	return fmt.Errorf("%s and %s are one engine", reconcile.HostLabel(first), reconcile.HostLabel(f.host))
}
func (f *fakeEngine) Close() error { return nil }

// fleet is boxes.yaml (config) over fake engines, one per host: the
// workspace's Connector.
type fleet struct {
	dir       string
	connected []string
	observed  []string
	mu        sync.Mutex
	snapshots map[string]*engine.Observed
	// ids are the engines' IDs by host; none by default.
	ids    map[string]string
	before func()
	// down makes every host unreachable.
	down bool
	// wrap, when set, is each host's engine made from its fake.
	wrap func(host string, e *fakeEngine) engine.Engine
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "boxes.yaml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	return &fleet{dir: dir, snapshots: map[string]*engine.Observed{}, ids: map[string]string{}}
}

// Connect connects host to its fake engine, noting that it did.
func (f *fleet) Connect(_ context.Context, h spec.Host) (engine.Engine, error) {
	f.mu.Lock()
	f.connected = append(f.connected, h.Name)
	f.mu.Unlock()
	if f.down {
		return nil, fmt.Errorf("%s is unreachable", h.Name)
	}
	e := &fakeEngine{obs: f.snapshots[h.Name], observed: &f.observed, mu: &f.mu, host: h.Name, id: f.ids[h.Name], before: f.before}
	if f.wrap != nil {
		return f.wrap(h.Name, e), nil
	}
	return e, nil
}

func (f *fleet) open(t *testing.T) *workspace.Workspace {
	t.Helper()
	return f.openWith(t, nil)
}

// openWith opens the fleet with each host's fake engine passed through
// wrap, when not nil.
func (f *fleet) openWith(t *testing.T, wrap func(host string, e *fakeEngine) engine.Engine) *workspace.Workspace {
	t.Helper()
	f.wrap = wrap
	ws, err := workspace.Open(filepath.Join(f.dir, "boxes.yaml"), workspace.Options{Connect: f})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ws.Close)
	return ws
}

func box(name string) *engine.Observed {
	return &engine.Observed{Volumes: []engine.Volume{{Name: "hbl-" + name + "_agent-data", Box: name}}}
}

func TestOneBoxConnectsOnlyToItsHost(t *testing.T) {
	f := newFleet(t)
	f.snapshots["nexus"] = box("gamma")
	// zulu and the local engine are unreachable: a command about gamma
	// must not care.
	ws := f.open(t)
	if len(f.connected) != 0 {
		t.Fatalf("Open connected to %q", f.connected)
	}
	host, r, err := ws.ObserveBox(context.Background(), "gamma")
	if err != nil {
		t.Fatal(err)
	}
	if host != "nexus" || r.Empty() {
		t.Errorf("gamma found on %q: %+v", host, r)
	}
	if !reflect.DeepEqual(f.connected, []string{"nexus"}) {
		t.Errorf("connected to %q, want only nexus", f.connected)
	}
}

func TestUndeclaredBoxIsFoundInHostOrder(t *testing.T) {
	f := newFleet(t)
	f.snapshots[""] = &engine.Observed{}
	f.snapshots["zulu"] = box("stray")
	f.snapshots["nexus"] = box("stray")
	for range 20 {
		ws := f.open(t)
		// stray is of no fleet: only rm reaches it.
		host, _, err := ws.ObserveRemoval(context.Background(), "stray")
		if err != nil {
			t.Fatal(err)
		}
		if host != "nexus" {
			t.Fatalf("stray found on %q, want nexus (the first host by name)", host)
		}
	}
	if got := f.open(t).Hosts(); !reflect.DeepEqual(got, []string{"", "nexus", "zulu"}) {
		t.Errorf("Hosts %q", got)
	}
}

func TestUnreachableHostsAreJoinedErrors(t *testing.T) {
	f := newFleet(t)
	f.snapshots[""] = &engine.Observed{}
	err := f.open(t).Observe(context.Background())
	if err == nil || err.Error() != "nexus is unreachable\nzulu is unreachable" {
		t.Errorf("got %v", err)
	}
}

func TestLockIsTakenBeforeObserving(t *testing.T) {
	f := newFleet(t)
	f.snapshots["nexus"] = box("gamma")
	ws := f.open(t)
	if err := ws.LockBox("gamma", "test"); err != nil {
		t.Fatal(err)
	}
	// A second process (here: another lock) cannot take it while observing runs.
	f.before = func() {
		if _, err := statedir.LockBox(ws.Path, "gamma", "other"); !errors.Is(err, statedir.ErrLocked) {
			t.Errorf("the box lock was not held while observing: %v", err)
		}
	}
	if _, _, err := ws.ObserveBox(context.Background(), "gamma"); err != nil {
		t.Fatal(err)
	}
	ws.Close()
	l, err := statedir.LockBox(ws.Path, "gamma", "after")
	if err != nil {
		t.Errorf("Close did not release the lock: %v", err)
	}
	l.Unlock()
}

func TestFilesAreFingerprintedAsParsed(t *testing.T) {
	f := newFleet(t)
	ws := f.open(t)
	before := ws.Files["boxes.yaml"]
	if before == "" {
		t.Fatal("boxes.yaml not fingerprinted")
	}
	// An edit after Open changes neither what was parsed nor its digest.
	if err := os.WriteFile(ws.Path, []byte(config+"\n# edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ws.Files["boxes.yaml"] != before || len(ws.Config.Boxes) != 2 {
		t.Error("the workspace re-read boxes.yaml")
	}
	if _, ok := ws.Files["boxes.lock"]; ok || ws.Lock != nil {
		t.Error("a missing lock was fingerprinted")
	}
}

func TestContainerErrors(t *testing.T) {
	f := newFleet(t)
	f.snapshots[""] = &engine.Observed{Containers: []engine.Container{{ID: "c", Box: "alpha", Service: "agent", State: "exited"}}}
	ws := f.open(t)
	if err := ws.Observe(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	var nr *workspace.NotRunningError
	if _, _, err := ws.Container("alpha", "agent", true); !errors.As(err, &nr) || nr.State != "exited" {
		t.Errorf("stopped agent: %v", err)
	}
	var nc *workspace.NoContainerError
	if _, _, err := ws.Container("alpha", "executor", false); !errors.As(err, &nc) {
		t.Errorf("missing executor: %v", err)
	}
	var ud *workspace.UndeclaredError
	_, _, err := ws.Container("ghost", "agent", false)
	if !errors.As(err, &ud) || !errors.Is(err, workspace.ErrUndeclared) {
		t.Fatalf("undeclared: %v", err)
	}
	sort.Strings(ud.Declared)
	if !reflect.DeepEqual(ud.Declared, []string{"alpha", "gamma"}) {
		t.Errorf("declared %q", ud.Declared)
	}
}

func TestMissingConfig(t *testing.T) {
	_, err := workspace.Open(filepath.Join(t.TempDir(), "boxes.yaml"), workspace.Options{})
	if !errors.Is(err, workspace.ErrNoConfig) {
		t.Errorf("got %v", err)
	}
}

// A plan whose --target leaves out every box of an unreachable host goes on
// without it, with a warning; one that needs the host fails naming it.
func TestPlanLeavesOutAnUnreachableHostItDoesNotTarget(t *testing.T) {
	f := newFleet(t)
	image := "sha256:" + strings.Repeat("a", 64)
	lock := "version: 1\npins: {}\nimage:\n  id: " + image + "\n  tools: {node: 22.1.0}\n"
	if err := os.WriteFile(filepath.Join(f.dir, "boxes.lock"), []byte(lock), 0o644); err != nil {
		t.Fatal(err)
	}
	f.snapshots[""] = &engine.Observed{Images: map[string]bool{image: true}}
	f.snapshots["zulu"] = &engine.Observed{}
	// nexus, gamma's host, is unreachable.
	plan := func(target ...string) (*reconcile.Plan, []string, error) {
		var warnings []string
		ws, err := workspace.Open(filepath.Join(f.dir, "boxes.yaml"), workspace.Options{
			Connect: f,
			Warn:    func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) },
		})
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		p, err := ws.Plan(context.Background(), reconcile.PlanOptions{Target: target})
		return p, warnings, err
	}
	p, warnings, err := plan("alpha")
	if err != nil {
		t.Fatalf("plan --target alpha: %v", err)
	}
	if len(p.Boxes) != 1 || p.Boxes[0].Name != "alpha" || p.Boxes[0].Action != reconcile.Create {
		t.Errorf("plan %+v, want alpha created", p.Boxes)
	}
	if want := "host nexus is left out of this plan, which targets no box there: nexus is unreachable"; warnings[len(warnings)-1] != want {
		t.Errorf("warnings %q, want %q", warnings, want)
	}
	for _, target := range [][]string{nil, {"alpha", "gamma"}, {"stray"}} {
		if _, _, err := plan(target...); err == nil || !strings.Contains(err.Error(), "nexus is unreachable") {
			t.Errorf("plan --target %q: %v, want nexus unreachable", target, err)
		}
	}
}

// A host that lacks the image gets it streamed from one that has it, or
// pulled when boxes.lock's ref is pinned by digest.
func TestPlanBringsTheImage(t *testing.T) {
	image := "sha256:" + strings.Repeat("a", 64)
	for _, c := range []struct{ ref, pull string }{
		{ref: "hermes-box-lite:test"},
		{ref: "registry.example/hermes@sha256:" + strings.Repeat("b", 64), pull: "registry.example/hermes@sha256:" + strings.Repeat("b", 64)},
	} {
		f := newFleet(t)
		lock := "version: 1\npins: {}\nimage:\n  id: " + image + "\n  ref: " + c.ref + "\n  tools: {node: 22.1.0}\n"
		if err := os.WriteFile(filepath.Join(f.dir, "boxes.lock"), []byte(lock), 0o644); err != nil {
			t.Fatal(err)
		}
		f.snapshots[""] = &engine.Observed{Images: map[string]bool{image: true}, ImageSizes: map[string]int64{image: 42}}
		f.snapshots["nexus"] = &engine.Observed{Images: map[string]bool{image: false}}
		f.snapshots["zulu"] = &engine.Observed{}
		p, err := f.open(t).Plan(context.Background(), reconcile.PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Images) != 1 || p.Images[0].To != "nexus" || p.Images[0].Pull != c.pull || (p.Images[0].From == nil) != (c.pull != "") || p.Images[0].Bytes != 42 {
			t.Errorf("ref %s: transfers %+v", c.ref, p.Images)
		}
	}
}

// boxes.lock is named in one place, for the workspace and the commands
// that use the lock alone.
func TestLockPath(t *testing.T) {
	f := newFleet(t)
	ws := f.open(t)
	if want := filepath.Join(f.dir, "boxes.lock"); ws.LockPath() != want || workspace.LockPathOf(ws.Path) != want {
		t.Errorf("LockPath %q, LockPathOf %q, want %q", ws.LockPath(), workspace.LockPathOf(ws.Path), want)
	}
}

// Each host is reached through the connector of its kind; a kind with none
// is refused, naming the host, before anything is reached.
func TestKindsConnectByKind(t *testing.T) {
	reached := map[string]bool{}
	k := workspace.Kinds{spec.HostDocker: connectFunc(func(_ context.Context, h spec.Host) (engine.Engine, error) {
		reached[h.Name] = true
		return nil, nil
	})}
	if _, err := k.Connect(context.Background(), spec.Host{Name: "nexus", Docker: "ssh://me@nexus"}); err != nil || !reached["nexus"] {
		t.Errorf("a Docker host: %v, reached %v", err, reached)
	}
	_, err := workspace.Kinds{}.Connect(context.Background(), spec.Host{Name: "nexus", Docker: "ssh://me@nexus"})
	if err == nil || err.Error() != "host nexus: this boxes reaches no engine of kind docker" {
		t.Errorf("no connector for the kind: %v", err)
	}
}

type connectFunc func(context.Context, spec.Host) (engine.Engine, error)

func (f connectFunc) Connect(ctx context.Context, h spec.Host) (engine.Engine, error) {
	return f(ctx, h)
}
