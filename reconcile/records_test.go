package reconcile_test

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/statedir"
)

// A freeze record is stale only once its save is gone; whoever takes a stale
// one removes it after thawing, or leaves it for the next try.
func TestFreezeRecords(t *testing.T) {
	freezes := statedir.Beside(filepath.Join(t.TempDir(), "boxes.yaml")).Freezes()
	stale := func() map[string]statedir.Freeze {
		t.Helper()
		got, err := freezes.Stale()
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	held, err := freezes.Hold(statedir.Freeze{Box: "alpha", Host: "nexus", Container: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := stale(); len(got) != 0 {
		t.Errorf("a running save's record is stale: %v", got)
	}
	if h, _, err := freezes.TakeStale("alpha"); h != nil || err != nil {
		t.Errorf("took a running save's record: %v", err)
	}
	held.Keep() // the save died without thawing
	got := stale()
	if f, ok := got["alpha"]; !ok || f.Host != "nexus" || f.Container != "c1" {
		t.Fatalf("stale records: %+v", got)
	}
	h, f, err := freezes.TakeStale("alpha")
	if err != nil || h == nil || f.Container != "c1" {
		t.Fatalf("take: %v %+v", err, f)
	}
	if _, ok := stale()["alpha"]; ok {
		t.Error("a record being thawed is stale to others")
	}
	h.Keep() // the thaw failed
	if h, _, _ = freezes.TakeStale("alpha"); h == nil {
		t.Fatal("a record kept after a failed thaw is gone")
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	if got := stale(); len(got) != 0 {
		t.Errorf("released: %v", got)
	}
	held, _ = freezes.Hold(statedir.Freeze{Box: "beta"})
	if err := held.Release(); err != nil || len(stale()) != 0 {
		t.Errorf("a save that thawed its box leaves a record: %v", err)
	}
}

func TestPlanOfFrozenAndHalfRestoredBoxes(t *testing.T) {
	o := emptyObserved()
	for _, n := range []string{"frozen", "paused", "halfway", "fine", "volumesonly"} {
		observeBox(t, o, testBox(n), testImage, "running", 0)
	}
	edit(o, "paused", "agent", func(c *engine.Container) { c.State = "paused" })
	// Cut short after the volumes and before the containers.
	var keep []engine.Container
	for _, c := range o.Containers {
		if c.Box != "volumesonly" {
			keep = append(keep, c)
		}
	}
	o.Containers = keep
	in := reconcile.Input{
		Config: testCfg(testBox("frozen"), testBox("paused"), testBox("halfway"), testBox("fine"), testBox("lost"), testBox("volumesonly")),
		Image:  testImage, Observed: obsMap(o),
		Tokens: map[string]string{"frozen": testToken, "paused": testToken, "halfway": testToken, "fine": testToken},
		Frozen: map[string]bool{"frozen": true, "paused": true},
		Restoring: map[string]statedir.Restoring{
			"halfway":     {Box: "halfway", Archive: "backups/h.tar.zst.age"},
			"lost":        {Box: "lost", Archive: "/abs/l.tar.gz.gpg"},
			"volumesonly": {Box: "volumesonly", Archive: "backups/v.tar.zst.age"},
		},
	}
	p, err := reconcile.NewPlan(in)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, b := range p.Boxes {
		s := string(b.Action)
		for _, r := range b.Reasons {
			s += " | " + r.String()
		}
		if b.Restore != "" {
			s += " | from " + b.Restore
		}
		got[b.Name] = s
	}
	want := map[string]string{
		"frozen":  "start | a save was cut short and left the box frozen (paused or quiesced): it is resumed",
		"paused":  "start | agent is paused | a save was cut short and left the box frozen (paused or quiesced): it is resumed",
		"halfway": "recreate | restore incomplete: seeded again from backups/h.tar.zst.age | from backups/h.tar.zst.age",
		"lost":    "create | box is declared and has no resources | restore incomplete: seeded again from /abs/l.tar.gz.gpg | from /abs/l.tar.gz.gpg",
		"fine":    "no-op",
		// No container to replace: a create over the volumes there.
		"volumesonly": "create | restore incomplete: seeded again from backups/v.tar.zst.age | from backups/v.tar.zst.age",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
