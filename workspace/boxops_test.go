package workspace_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/apply"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/workspace"
)

// A one-box command finds a box with nothing on its host as such, having
// reached only that host.
func TestLockedBoxWithNoResources(t *testing.T) {
	f := newFleet(t)
	f.snapshots["nexus"] = &engine.Observed{}
	ws := f.open(t)
	_, _, err := ws.LockedBox(context.Background(), "gamma", "boxes stop")
	var none *workspace.NoResourcesError
	if !errors.As(err, &none) || none.Box != "gamma" || none.Host != "nexus" {
		t.Fatalf("err %v", err)
	}
	if err.Error() != "box gamma has no resources on host nexus" {
		t.Errorf("message %q", err)
	}
	if !reflect.DeepEqual(f.connected, []string{"nexus"}) {
		t.Errorf("connected to %q", f.connected)
	}
}

// load refuses a box that exists on any host, and needs the lock's image
// on the box's host or on an engine that can stream it there, before
// anything is asked or changed.
func TestLoadPlanChecks(t *testing.T) {
	f := newFleet(t)
	f.snapshots[""] = &engine.Observed{}
	f.snapshots["nexus"] = box("alpha") // alpha is declared on the local engine
	f.snapshots["zulu"] = &engine.Observed{}
	ws := f.open(t)
	_, _, err := ws.LoadPlan(context.Background(), "a.tar.zst.age", "alpha")
	var exists *workspace.ExistsError
	if !errors.As(err, &exists) || exists.Host != "nexus" {
		t.Fatalf("load over a box on another host: %v", err)
	}
	if _, _, err := ws.LoadPlan(context.Background(), "a.tar.zst.age", "nope"); !errors.Is(err, workspace.ErrUndeclared) {
		t.Errorf("load of an undeclared box: %v", err)
	}

	ws.Close()
	loadPlan := func() (spec.Box, *reconcile.Plan, error) {
		ws := f.open(t)
		defer ws.Close()
		return ws.LoadPlan(context.Background(), "a.tar.zst.age", "gamma")
	}
	f.snapshots["nexus"] = &engine.Observed{}
	if _, _, err := loadPlan(); !errors.Is(err, reconcile.ErrNoImage) {
		t.Errorf("load with no image locked: %v", err)
	}
	lock := &spec.Lock{Version: 1, Image: &spec.Image{ID: "sha256:" + strings.Repeat("1", 64)}}
	if err := spec.WriteLock(filepath.Join(f.dir, "boxes.lock"), lock); err != nil {
		t.Fatal(err)
	}
	if _, _, err := loadPlan(); !errors.Is(err, reconcile.ErrImageMissing) {
		t.Errorf("load with the image missing on the host: %v", err)
	}
	// The local engine has it: the load streams it to nexus first.
	f.snapshots[""] = &engine.Observed{Images: map[string]bool{lock.Image.ID: true}, ImageSizes: map[string]int64{lock.Image.ID: 42}}
	_, p, err := loadPlan()
	if err != nil {
		t.Fatalf("load to a host that lacks the image, another having it: %v", err)
	}
	if len(p.Images) != 1 || p.Images[0].To != "nexus" || p.Images[0].From == nil || *p.Images[0].From != "" || p.Images[0].Bytes != 42 {
		t.Errorf("load's image transfers %+v", p.Images)
	}
	f.snapshots["nexus"] = &engine.Observed{Images: map[string]bool{lock.Image.ID: true}}
	b, p, err := loadPlan()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Images) != 0 {
		t.Errorf("a transfer to a host that has the image: %+v", p.Images)
	}
	if b.Name != "gamma" || len(p.Boxes) != 1 || p.Boxes[0].Action != reconcile.Create || !filepath.IsAbs(p.Boxes[0].Restore) {
		t.Errorf("load plan %+v", p.Boxes)
	}
	// A box that asks for more CPUs than its host has, as apply's plan refuses it.
	f.snapshots["nexus"].CPUs = 2
	if err := os.WriteFile(filepath.Join(f.dir, "boxes.yaml"), []byte(strings.Replace(config, "    host: nexus\n", "    host: nexus\n    cpus: 4\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := loadPlan(); !errors.Is(err, reconcile.ErrOverHost) || !strings.Contains(err.Error(), "box gamma asks for cpus: 4 (") ||
		!strings.Contains(err.Error(), "boxes.yaml:6:11), but host nexus has 2 CPUs") {
		t.Errorf("load of a box bigger than its host: %v", err)
	}
	// A box whose runtime its host lacks, as apply's plan refuses it.
	f.snapshots["nexus"].CPUs = 0
	f.snapshots["nexus"].Runtimes = []string{"runc"}
	if err := os.WriteFile(filepath.Join(f.dir, "boxes.yaml"), []byte(strings.Replace(config, "    host: nexus\n", "    host: nexus\n    runtime: runsc\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := loadPlan(); !errors.Is(err, reconcile.ErrNoRuntime) ||
		!strings.Contains(err.Error(), "box gamma asks for runtime: runsc (") || !strings.Contains(err.Error(), "boxes.yaml:6:14), but host nexus has only runc") {
		t.Errorf("load of a box whose runtime its host lacks: %v", err)
	}
}

// validate warns of a missing lock and of a stale schema file, with a hint each.
func TestValidateWarnings(t *testing.T) {
	f := newFleet(t)
	if err := os.WriteFile(filepath.Join(f.dir, workspace.SchemaFile), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := f.open(t).Validate(func(*spec.Lock) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if v.Lock != "missing" || len(v.Warnings) != 2 || len(v.Hints) != 2 || !reflect.DeepEqual(v.Hosts, []string{"nexus", "zulu"}) || len(v.Boxes) != 2 {
		t.Errorf("validation %+v", v)
	}
}

func TestPartialErrorKeepsEveryError(t *testing.T) {
	inner := errors.Join(&apply.BoxError{Box: "a", Err: apply.ErrNoToken}, &apply.BoxError{Box: "b", Err: errors.New("boom")})
	err := error(&workspace.PartialError{Err: inner, Failed: 2, Boxes: 3})
	if !errors.Is(err, apply.ErrNoToken) {
		t.Error("the boxes' errors are lost")
	}
	if want := inner.Error() + "\napply failed for 2 of 3 boxes; the others were done"; err.Error() != want {
		t.Errorf("message %q", err)
	}
}
