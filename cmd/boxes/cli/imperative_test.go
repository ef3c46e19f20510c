package cli

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/workspace"
)

// snapshotEngine is an engine that only serves a snapshot.
type snapshotEngine struct {
	engine.Engine
	obs *engine.Observed
}

func (e snapshotEngine) Observe(context.Context, ...string) (*engine.Observed, error) {
	return e.obs, nil
}
func (e snapshotEngine) Capabilities() engine.Capabilities {
	return engine.Capabilities{Freeze: true, Rename: true}
}
func (e snapshotEngine) ID() string                     { return "" }
func (e snapshotEngine) MachineAddresses() []netip.Addr { return nil }

func (e snapshotEngine) ExecutorReach(bind string, port int) engine.Reach {
	return engine.Reach{How: engine.ReachDirect, URL: reconcile.ExecutorURL(bind, port)}
}
func (e snapshotEngine) Close() error { return nil }

// snapshots connects each host to an engine serving its snapshot, an empty
// one when it has none.
type snapshots map[string]*engine.Observed

func (s snapshots) Connect(_ context.Context, h spec.Host) (engine.Engine, error) {
	o := s[h.Name]
	if o == nil {
		o = &engine.Observed{}
	}
	return snapshotEngine{obs: o}, nil
}

// fakeWorkspace is boxes.yaml text over engines serving snapshots by host.
func fakeWorkspace(t *testing.T, yaml string, byHost map[string]*engine.Observed) *workspace.Workspace {
	t.Helper()
	path := filepath.Join(t.TempDir(), "boxes.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(path, workspace.Options{Connect: snapshots(byHost)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ws.Close)
	return ws
}

func agentOf(box, image string) *engine.Observed {
	return &engine.Observed{Containers: []engine.Container{{ID: box + "-a", Name: "hbl-" + box + "-agent-1", Box: box, Fleet: "f", Service: "agent", State: "exited", Image: image}}}
}

const twoHosts = `version: 1
fleet: f
boxes:
  beta: {}
  alpha:
    host: nexus
hosts:
  nexus: {docker: "ssh://me@nexus"}
  zulu: {docker: "ssh://me@zulu"}
`

// ls lists declared boxes by name, then undeclared ones host by host
// in name order: never in map order.
func TestLsRowsOrder(t *testing.T) {
	for range 30 {
		ws := fakeWorkspace(t, twoHosts, map[string]*engine.Observed{
			"":      agentOf("stray-local", "i"),
			"nexus": agentOf("stray-nexus", "i"),
			"zulu":  agentOf("stray-zulu", "i"),
		})
		if err := ws.Observe(context.Background()); err != nil {
			t.Fatal(err)
		}
		rows, err := ws.List(false)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range rows {
			names = append(names, r.Name+"@"+r.Host)
		}
		want := []string{"alpha@nexus", "beta@", "stray-local@", "stray-nexus@nexus", "stray-zulu@zulu"}
		if !reflect.DeepEqual(names, want) {
			t.Fatalf("rows %q, want %q", names, want)
		}
	}
}

// start needs no image in boxes.lock (it starts the containers as they
// are, on the image they run) and acts on the box's declared host even when
// another host holds resources of the same name.
func TestStartPlanUsesTheBoxsHostAndImage(t *testing.T) {
	ws := fakeWorkspace(t, twoHosts, map[string]*engine.Observed{
		"":      agentOf("alpha", "sha256:other"),
		"nexus": agentOf("alpha", "sha256:running"),
	})
	host, r, err := ws.ObserveBox(context.Background(), "alpha")
	if err != nil {
		t.Fatal(err)
	}
	p, err := ws.StartPlan(host, "alpha", r)
	if err != nil {
		t.Fatal(err)
	}
	if p.Image != "sha256:running" || p.Boxes[0].Host != "nexus" || p.Boxes[0].Action != reconcile.Start {
		t.Errorf("start plan: image %q, %+v", p.Image, p.Boxes[0])
	}
	if _, err := ws.StartPlan("", "ghost", r); err == nil {
		t.Error("start of an undeclared box was planned")
	}
}

// rm takes --confirm-delete NAME as apply spells it, the same as --confirm.
func TestRmConfirmation(t *testing.T) {
	for _, tc := range []struct {
		confirm, confirmDelete, want, err string
	}{
		{"", "", "", ""},
		{"alpha", "", "alpha", ""},
		{"", "alpha", "alpha", ""},
		{"alpha", "alpha", "alpha", ""},
		{"", "beta", "", "--confirm-delete beta does not name the box to remove, alpha; nothing was changed"},
		{"beta", "", "", "--confirm beta does not name the box to remove, alpha; nothing was changed"},
		{"beta", "beta", "", "--confirm-delete beta does not name the box to remove, alpha; nothing was changed"},
		{"alpha", "beta", "", "--confirm alpha and --confirm-delete beta name different boxes; nothing was changed"},
	} {
		got, err := rmConfirmation("alpha", tc.confirm, tc.confirmDelete)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("--confirm %q --confirm-delete %q: %q, %v; want %q, %q", tc.confirm, tc.confirmDelete, got, err, tc.want, tc.err)
		}
	}
}
