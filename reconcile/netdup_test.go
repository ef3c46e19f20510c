package reconcile_test

import (
	"reflect"
	"testing"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
)

// twoNetworks observes box alpha with a second labelled network of its
// network's name, ID second, and its containers on the networks given by
// service (none: not on any).
func twoNetworks(t *testing.T, second string, on map[string]string) *engine.Observed {
	t.Helper()
	o := emptyObserved()
	observeBox(t, o, testBox("alpha"), testImage, "running", 0)
	first := o.Networks[0]
	dup := first
	dup.ID = second
	o.Networks = append(o.Networks, dup)
	for i := range o.Containers {
		c := &o.Containers[i]
		c.NetworkIDs = nil
		if id, ok := on[c.Service]; ok {
			c.NetworkIDs = []string{id}
		}
	}
	o.Sort()
	return o
}

func planAlpha(t *testing.T, o *engine.Observed) reconcile.BoxPlan {
	t.Helper()
	p, err := reconcile.NewPlan(reconcile.Input{Config: testCfg(testBox("alpha")), Image: testImage, Observed: obsMap(o), Tokens: map[string]string{"alpha": testToken}})
	if err != nil {
		t.Fatal(err)
	}
	return p.Boxes[0]
}

// Two networks named like the box's (a create that raced one still in
// flight in the engine) are drift: the plan says so, keeps the one the
// containers use, and lists the other for removal.
func TestPlanSeesTwoNetworksOfOneName(t *testing.T) {
	name := compose.NetworkName("alpha")
	t.Run("the unused one goes", func(t *testing.T) {
		bp := planAlpha(t, twoNetworks(t, "net-0-stray", map[string]string{compose.AgentService: "net-alpha", compose.ExecutorService: "net-alpha"}))
		if bp.Action != reconcile.Recreate {
			t.Fatalf("action %s, want recreate: %+v", bp.Action, bp)
		}
		var said []string
		for _, r := range bp.Reasons {
			said = append(said, r.String())
		}
		want := "2 networks named " + name + " (an interrupted create): the box keeps one, the others are removed"
		if !reflect.DeepEqual(said, []string{want}) {
			t.Errorf("reasons %q, want %q", said, want)
		}
		if want := []reconcile.NamedID{{Name: name, ID: "net-0-stray"}}; !reflect.DeepEqual(bp.StrayNetworks, want) {
			t.Errorf("stray networks %+v, want %+v", bp.StrayNetworks, want)
		}
		if len(bp.Strays) != 0 {
			t.Errorf("containers removed first: %+v, want none", bp.Strays)
		}
	})
	t.Run("no container on either: the smaller ID stays", func(t *testing.T) {
		o := twoNetworks(t, "net-0-other", nil)
		var keep []engine.Container
		for _, c := range o.Containers {
			if c.Box != "alpha" {
				keep = append(keep, c)
			}
		}
		o.Containers = keep
		bp := planAlpha(t, o)
		if want := []reconcile.NamedID{{Name: name, ID: "net-alpha"}}; bp.Action != reconcile.Recreate || !reflect.DeepEqual(bp.StrayNetworks, want) {
			t.Errorf("plan %+v, want recreate removing %+v", bp, want)
		}
		// The same snapshot in another order gives the same plan.
		o.Networks[0], o.Networks[1] = o.Networks[1], o.Networks[0]
		if again := planAlpha(t, o); !reflect.DeepEqual(again, bp) {
			t.Errorf("plan depends on list order: %+v vs %+v", again, bp)
		}
	})
	t.Run("a container on the other one goes with it", func(t *testing.T) {
		bp := planAlpha(t, twoNetworks(t, "net-z", map[string]string{compose.AgentService: "net-alpha", compose.ExecutorService: "net-z"}))
		exec := reconcile.NamedID{Name: compose.ContainerName("alpha", compose.ExecutorService), ID: "id-alpha-" + compose.ExecutorService}
		if !reflect.DeepEqual(bp.Strays, []reconcile.NamedID{exec}) || len(bp.StrayNetworks) != 1 || bp.StrayNetworks[0].ID != "net-z" {
			t.Errorf("plan %+v, want the executor and net-z removed", bp)
		}
	})
	t.Run("one network is no change", func(t *testing.T) {
		o := emptyObserved()
		observeBox(t, o, testBox("alpha"), testImage, "running", 0)
		if bp := planAlpha(t, o); bp.Action != reconcile.NoOp {
			t.Errorf("plan %+v, want no-op", bp)
		}
	})
}
