package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
)

// rm deletes what the box has, naming the backup left of it and whether
// boxes.yaml still declares it; stop stops the box as it is.
func TestRemovalAndStopPlan(t *testing.T) {
	f := newFleet(t)
	if err := os.MkdirAll(filepath.Join(f.dir, "backups"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "backups", "stray-20260101-120000.tar.zst.age"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ws := f.open(t)
	r := engine.Resources{Volumes: []engine.Volume{{Name: "hbl-stray_agent-data", Box: "stray"}}}
	for _, c := range []struct {
		name, backup string
		declared     bool
	}{{"stray", "stray-20260101-120000.tar.zst.age", false}, {"alpha", "", true}} {
		res, p := ws.Removal(c.name, "zulu", r)
		if res.Box != c.name || res.Host != "zulu" || res.State != "removed" || *res.Volumes != 1 || *res.Declared != c.declared || !strings.HasSuffix(*res.Backup, c.backup) || (c.backup == "") != (*res.Backup == "") {
			t.Errorf("%s: result %+v (backup %q, declared %v)", c.name, res, *res.Backup, *res.Declared)
		}
		if len(p.Boxes) != 1 || p.Boxes[0].Name != c.name || p.Boxes[0].Host != "zulu" || p.Boxes[0].Action != reconcile.Delete {
			t.Errorf("%s: plan %+v, want its delete on zulu", c.name, p.Boxes)
		}
	}
	p, err := ws.StopPlan("nexus", "gamma", engine.Resources{})
	if err != nil || !reflect.DeepEqual(p, reconcile.StopPlan("nexus", "gamma")) {
		t.Errorf("StopPlan = %+v, %v", p, err)
	}
}

// ls observes every host before listing; doctor only the box's, and fails
// as that host does.
func TestObserveListAndDoctor(t *testing.T) {
	f := newFleet(t)
	f.snapshots[""] = box("alpha")
	f.snapshots["zulu"] = &engine.Observed{}
	rows, err := f.open(t).ObserveList(context.Background(), false)
	if err == nil || !strings.Contains(err.Error(), "nexus is unreachable") || rows != nil {
		t.Errorf("ls with nexus unreachable: %v, %v", rows, err)
	}
	f.snapshots["nexus"] = box("gamma")
	rows, err = f.open(t).ObserveList(context.Background(), false)
	if err != nil || len(rows) != 2 || rows[0].Name != "alpha" || rows[1].Name != "gamma" {
		t.Errorf("ls: %+v, %v", rows, err)
	}
	delete(f.snapshots, "nexus")
	f.connected = nil
	if _, err := f.open(t).ObserveDoctor(context.Background(), "gamma"); err == nil || !strings.Contains(err.Error(), "nexus is unreachable") {
		t.Errorf("doctor gamma with nexus unreachable: %v", err)
	}
	if !reflect.DeepEqual(f.connected, []string{"nexus"}) {
		t.Errorf("doctor connected to %q, want only nexus", f.connected)
	}
}
