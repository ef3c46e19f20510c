package workspace_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/statedir"
)

// apply carries out, under its lock, a saved plan only while it is still
// what a plan with its options makes, and a new plan otherwise.
func TestPlanToApply(t *testing.T) {
	f := newFleet(t)
	image := "sha256:" + strings.Repeat("a", 64)
	lock := "version: 1\npins: {}\nimage:\n  id: " + image + "\n  tools: {node: 22.1.0}\n"
	if err := os.WriteFile(filepath.Join(f.dir, "boxes.lock"), []byte(lock), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"", "nexus", "zulu"} {
		f.snapshots[h] = &engine.Observed{Images: map[string]bool{image: true}}
	}
	ctx := context.Background()
	opts := reconcile.PlanOptions{Target: []string{"alpha"}}
	ws := f.open(t)
	p, err := ws.PlanToApply(ctx, "boxes apply", "", "", opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.open(t).PlanToApply(ctx, "boxes apply", "", "", opts); !errors.Is(err, statedir.ErrLocked) {
		t.Errorf("a second apply while the first holds the lock: %v, want it refused", err)
	}
	if len(p.Boxes) != 1 || p.Boxes[0].Name != "alpha" || p.Boxes[0].Action != reconcile.Create {
		t.Fatalf("new plan %+v, want alpha created", p.Boxes)
	}
	saved := filepath.Join(f.dir, "plan.json")
	if err := ws.WriteSaved(saved, opts, p); err != nil {
		t.Fatal(err)
	}
	ws.Close()
	ws = f.open(t)
	again, err := ws.PlanToApply(ctx, "boxes apply", saved, "plan.json", reconcile.PlanOptions{})
	if err != nil {
		t.Fatalf("saved plan: %v", err)
	}
	ws.Close()
	if !reflect.DeepEqual(again.Boxes, p.Boxes) || !reflect.DeepEqual(again.Target, []string{"alpha"}) {
		t.Errorf("saved plan %+v, want %+v", again, p)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "boxes.yaml"), []byte(config+"# changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := f.open(t).PlanToApply(ctx, "boxes apply", saved, "plan.json", reconcile.PlanOptions{}); !errors.Is(err, reconcile.ErrStalePlan) {
		t.Errorf("after boxes.yaml changed: %v, want a stale plan", err)
	}
}
