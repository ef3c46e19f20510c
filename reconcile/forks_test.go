package reconcile_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/statedir"
)

// A box with from: is seeded when created, from a snapshot its engine
// holds or from a box as it is; a fork cut short is seeded again; an
// existing box is not touched by its from:.
func TestPlanOfForks(t *testing.T) {
	fork := func(name, from string) spec.Box {
		b := testBox(name)
		b.From = from
		return b
	}
	o := emptyObserved()
	observeBox(t, o, testBox("base"), testImage, "running", 0)
	observeBox(t, o, fork("made", "base@clean"), testImage, "running", 0)
	observeBox(t, o, fork("halfway", "base@clean"), testImage, "running", 0)
	o.Snapshots = append(o.Snapshots, engine.Snapshot{Volume: "hbl-base_snap-clean", Box: "base", Label: "clean", Fleet: testFleet, Size: 1 << 20})
	in := reconcile.Input{
		Config: testCfg(testBox("base"), fork("trial", "base@clean"), fork("copy", "base"), fork("made", "base@clean"), fork("halfway", "base@clean"), fork("lost", "base")),
		Image:  testImage, Observed: obsMap(o),
		Tokens:    map[string]string{"base": testToken, "made": testToken, "halfway": testToken},
		Restoring: map[string]statedir.Restoring{"halfway": {Box: "halfway", From: "base@clean"}, "lost": {Box: "lost", From: "base"}},
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
		if b.From != "" {
			s += " | from " + b.From
		}
		got[b.Name] = s
	}
	want := map[string]string{
		"base":    "no-op",
		"made":    "no-op",
		"trial":   "create | box is declared and has no resources | seeded from snapshot clean of box base | from base@clean",
		"copy":    "create | box is declared and has no resources | seeded from box base's /data (copied paused) | from base",
		"halfway": "recreate | fork incomplete: seeded again from snapshot clean of box base | from base@clean",
		"lost":    "create | box is declared and has no resources | fork incomplete: seeded again from box base's /data (copied paused) | from base",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	for _, b := range p.JSON().Boxes {
		if b.Name == "trial" && b.From != "base@clean" {
			t.Errorf("plan --json: trial's from is %q", b.From)
		}
	}
}

// A fork of a snapshot the box's engine does not hold whole, or that is
// another fleet's, is a plan error naming it, with where to look.
func TestPlanOfForksRefused(t *testing.T) {
	trial := testBox("trial")
	trial.From = "base@clean"
	for _, tc := range []struct {
		name      string
		snap      *engine.Snapshot
		msg, hint string
	}{
		{"none", nil, "from: base@clean: the local engine has no snapshot clean of box base", "boxes snapshot base clean makes this one"},
		{"another label", &engine.Snapshot{Box: "base", Label: "dirty", Fleet: testFleet}, "has no snapshot clean of box base", ""},
		{"incomplete", &engine.Snapshot{Box: "base", Label: "clean", Fleet: testFleet, Writing: true}, "snapshot clean of box base on the local engine is incomplete", "boxes snapshots base lists"},
		{"another fleet's", &engine.Snapshot{Box: "base", Label: "clean", Fleet: "other"}, "is fleet other's, not this fleet's", "a snapshot this fleet made"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := emptyObserved()
			if tc.snap != nil {
				o.Snapshots = append(o.Snapshots, *tc.snap)
			}
			_, err := reconcile.NewPlan(reconcile.Input{Config: testCfg(trial), Image: testImage, Observed: obsMap(o)})
			var ns *reconcile.NoSourceError
			if !errors.As(err, &ns) || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(ns.Hint(), tc.hint) {
				t.Fatalf("got %v (hint %q), want %q with hint %q", err, hintOf(err), tc.msg, tc.hint)
			}
		})
	}
}

func hintOf(err error) string {
	var h interface{ Hint() string }
	if errors.As(err, &h) {
		return h.Hint()
	}
	return ""
}
