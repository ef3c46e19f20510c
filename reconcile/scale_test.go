package reconcile_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
)

// A plan loads a compose project a few times for each shape of box (the
// same settings), not twice for each box: a load takes milliseconds, and a
// fleet of thousands of boxes would take minutes to plan.
func TestPlanLoadsPerShape(t *testing.T) {
	const n = 40
	o := emptyObserved()
	cfg := testCfg()
	tokens := map[string]string{}
	for i := range n {
		b := testBox(fmt.Sprintf("box%03d", i))
		if i%2 == 1 {
			b.Memory = 8 * gib
		}
		observeBox(t, o, b, testImage, "running", 0)
		cfg.Boxes = append(cfg.Boxes, b)
		tokens[b.Name] = testToken
	}
	before := compose.Loads()
	p, err := reconcile.NewPlan(reconcile.Input{Config: cfg, Image: testImage, Observed: obsMap(o), Tokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	if p.Changes() {
		names, actions := p.Changing()
		t.Fatalf("a plan of %d boxes as made changes %v: %v", n, names, actions)
	}
	// Two shapes, each with its port as Docker chose it and as hashed
	// before (port: auto): two loads for each.
	if loads := compose.Loads() - before; loads > 8 {
		t.Errorf("a plan of %d boxes of 2 shapes loaded %d compose projects; want at most 8", n, loads)
	}
}

// Of gives a box's resources in the lists' order, as a look through them
// would, from the index Sort makes; a list changed since is looked
// through, so a resource added after Sort is found.
func TestOfAfterSort(t *testing.T) {
	o := emptyObserved()
	for i := range 30 {
		observeBox(t, o, testBox(fmt.Sprintf("box%02d", 29-i)), testImage, "running", 0)
	}
	o.Sort()
	lookedThrough := func(name string) engine.Resources {
		var r engine.Resources
		for _, c := range o.Containers {
			if c.Box == name {
				r.Containers = append(r.Containers, c)
			}
		}
		for _, v := range o.Volumes {
			if v.Box == name {
				r.Volumes = append(r.Volumes, v)
			}
		}
		for _, n := range o.Networks {
			if n.Box == name {
				r.Networks = append(r.Networks, n)
			}
		}
		return r
	}
	check := func(when string, names ...string) {
		t.Helper()
		for _, name := range names {
			if got, want := o.Of(name), lookedThrough(name); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: Of(%s) = %+v, want %+v", when, name, got, want)
			}
		}
	}
	check("sorted", "box00", "box17", "box29", "nobox")

	// A container added, and one changed in place, after Sort.
	o.Containers = append(o.Containers, engine.Container{ID: "late", Name: "hbl-box03-extra", Box: "box03", Service: "extra"})
	o.Containers[0].State = "exited"
	check("after an append", "box00", "box03", "box29")
	o.Sort()
	check("sorted again", "box00", "box03", "box29")
}

// MadeWith is true for the token a box's executor was made with, and for
// no other; a box whose settings changed since says nothing (its engine
// must be asked).
func TestMadeWith(t *testing.T) {
	b := testBox("scratch-1")
	o := emptyObserved()
	observeBox(t, o, b, testImage, "running", 0)
	o.Sort()
	in := reconcile.Input{Config: testCfg(b), Image: testImage, Observed: obsMap(o)}
	r := o.Of(b.Name)
	if !reconcile.MadeWith(in, b, r, testToken) {
		t.Errorf("MadeWith(its own token) = false")
	}
	if reconcile.MadeWith(in, b, r, "tok-someone-else") {
		t.Errorf("MadeWith(another token) = true")
	}
	if reconcile.MadeWith(in, b, r, "") {
		t.Errorf("MadeWith(no token) = true")
	}
	changed := b
	changed.Memory = 8 * gib
	if reconcile.MadeWith(in, changed, r, testToken) {
		t.Errorf("MadeWith(its token, settings changed) = true")
	}
}
