package reconcile_test

import (
	"fmt"
	"testing"

	"github.com/hermes-box/boxes/compose"
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
