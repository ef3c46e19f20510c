package apply_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/apply"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/statedir"
)

type fakeThawer struct{ j *journal }

func (f fakeThawer) Thaw(_ context.Context, host, box string) error {
	f.j.add(box, "thaw")
	return nil
}

type failingSeeder struct{ fakeSeeder }

// failingSeeder's restore is cut short: the engine went away mid-copy.
func (failingSeeder) Seed(context.Context, string, string, string) error {
	return fmt.Errorf("engine gone: %w", engine.ErrUnreachable)
}

// refusingSeeder's restore is refused by the engine.
type refusingSeeder struct{ fakeSeeder }

func (refusingSeeder) Seed(context.Context, string, string, string) error {
	return errors.New("Error response from daemon: file name too long")
}

// A restore the engine refuses would fail the same way every time: what it
// made (labelled with the box and this fleet) is removed with the record
// and the token, and nothing else: not another fleet's resource of that
// name, not another box's.
func TestApplierRemovesWhatARefusedRestoreMade(t *testing.T) {
	a, j, e := newApplier(t, testBox("alpha"))
	o := emptyObserved()
	observeBox(t, o, testBox("alpha"), testImage, "created", 0)
	observeBox(t, o, testBox("beta"), testImage, "running", 0)
	o.Volumes = append(o.Volumes, engine.Volume{Name: "hbl-alpha_other", Box: "alpha", Fleet: "other-team"})
	e.observed = o
	a.Seeder = refusingSeeder{fakeSeeder{j}}
	err := a.Apply(context.Background(), reconcile.LoadPlan(testBox("alpha"), testImage, "/a.tar.zst.age"))
	var re *apply.RestoreError
	if !errors.As(err, &re) {
		t.Fatalf("a refused restore: %v", err)
	}
	// A box is three containers (agent, executor, gate) on two networks
	// (default and inside) with two volumes: the restore made all of them.
	for _, want := range []string{"file name too long", "what the restore created was removed (3 containers, 2 networks, 2 volumes)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	var removed []string
	for _, s := range j.all {
		if _, step, _ := strings.Cut(s, ": "); strings.HasPrefix(step, "rm ") {
			removed = append(removed, step)
		}
	}
	wantRemoved := []string{
		"rm container id-alpha-agent", "rm container id-alpha-executor", "rm container id-alpha-gate",
		"rm network net-alpha", "rm network inside-alpha",
		"rm volume hbl-alpha_agent-data", "rm volume hbl-alpha_exec-data",
	}
	if !reflect.DeepEqual(removed, wantRemoved) {
		t.Errorf("removed %q, want the 3 containers, the 2 networks and the 2 volumes of alpha's fleet: %q", removed, wantRemoved)
	}
	for _, s := range removed {
		if strings.Contains(s, "other") || strings.Contains(s, "beta") {
			t.Errorf("removed %s, which the restore did not make", s)
		}
	}
	if _, ok, err := statedir.Beside(a.Config.Path).Restores().Get("alpha"); ok || err != nil {
		t.Errorf("the restore record is left (%v)", err)
	}
	if _, ok, _ := a.Tokens.Get("alpha"); ok {
		t.Error("the token is left")
	}
}

// A seeded box is recorded as restoring from before it is created until it
// was resumed; a recreate seeds it again; a frozen box is thawed once it runs.
func TestApplierRecordsRestoresAndThaws(t *testing.T) {
	a, j, _ := newApplier(t, testBox("alpha"), testBox("beta"), stopped(testBox("gamma")))
	a.Thawer = fakeThawer{j}
	for _, n := range []string{"beta", "gamma"} {
		if err := a.Tokens.Put(n, testToken); err != nil {
			t.Fatal(err)
		}
	}
	restores := statedir.Beside(a.Config.Path).Restores()
	a.Seeder = failingSeeder{fakeSeeder{j}}
	if err := a.Apply(context.Background(), reconcile.LoadPlan(testBox("alpha"), testImage, "/a.tar.zst.age")); err == nil {
		t.Fatal("a failing seed succeeded")
	}
	if r, ok, err := restores.Get("alpha"); !ok || err != nil || r.Archive != "/a.tar.zst.age" {
		t.Fatalf("a failed restore is not recorded: %+v %v", r, err)
	}
	a.Seeder = fakeSeeder{j}
	frozen := []reconcile.Reason{{Kind: "frozen"}}
	p := &reconcile.Plan{Image: testImage, Boxes: []reconcile.BoxPlan{
		{Name: "alpha", Action: reconcile.Recreate, State: spec.Running, Restore: "/a.tar.zst.age", Reasons: []reconcile.Reason{{Kind: "incomplete", New: "/a.tar.zst.age"}}},
		{Name: "beta", Action: reconcile.Start, Reasons: frozen},
		{Name: "gamma", Action: reconcile.Stop, Reasons: frozen},
	}}
	if err := a.Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := restores.Get("alpha"); ok || err != nil {
		t.Errorf("a finished restore is still recorded (%v)", err)
	}
	want := map[string][]string{
		"alpha": {"create", "done: restoring from /a.tar.zst.age: engine gone: the engine could not be reached", "record", "create --force", "seed /a.tar.zst.age", "start " + testImage, "ready", "finish", "init", "done"},
		"beta":  {"start " + testImage, "ready", "thaw", "init", "done"},
		"gamma": {"thaw", "stop", "done"},
	}
	for box, steps := range want {
		if got := j.of(box); !reflect.DeepEqual(got, steps) {
			t.Errorf("%s: %q, want %q", box, got, steps)
		}
	}
}

// stepProgress keeps every step, as the applier's display shows them.
type stepProgress struct {
	quietProgress
	steps *[]string
}

func (p stepProgress) Step(box, msg string) { *p.steps = append(*p.steps, box+": "+msg) }

// A load's plan names its archive by absolute path; its progress and its
// errors name it as Shown does (the command line: relative to the working
// directory), as the user typed it.
func TestApplierNamesTheArchiveAsShown(t *testing.T) {
	a, j, e := newApplier(t, testBox("alpha"))
	var steps []string
	a.Progress = stepProgress{quietProgress{j}, &steps}
	a.Shown = func(p string) string { return strings.TrimPrefix(p, "/work/") }
	if err := a.Apply(context.Background(), reconcile.LoadPlan(testBox("alpha"), testImage, "/work/a.tar.zst.age")); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(steps, "alpha: restoring /data from a.tar.zst.age") {
		t.Errorf("steps %q name the archive otherwise", steps)
	}

	o := emptyObserved()
	observeBox(t, o, testBox("alpha"), testImage, "created", 0)
	e.observed = o
	a.Seeder = refusingSeeder{fakeSeeder{j}}
	err := a.Apply(context.Background(), reconcile.LoadPlan(testBox("alpha"), testImage, "/work/a.tar.zst.age"))
	if err == nil || !strings.Contains(err.Error(), "restoring from a.tar.zst.age: ") || strings.Contains(err.Error(), "/work/") {
		t.Errorf("a refused restore: %v", err)
	}
	if h := hint.Lines(err); len(h) != 1 || !strings.HasPrefix(h[0], "boxes verify a.tar.zst.age ") {
		t.Errorf("hints %q", h)
	}
}
