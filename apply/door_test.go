package apply_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
)

// A gate-only recreate asks the engine to remake the gate alone: the
// agent's and the executor's containers are not recreated.
func TestApplierReplacesTheGateAlone(t *testing.T) {
	b := testBox("alpha")
	b.Egress = spec.Egress{Mode: spec.EgressNone}
	a, j, _ := newApplier(t, b)
	if err := a.Tokens.Put("alpha", testToken); err != nil {
		t.Fatal(err)
	}
	p := &reconcile.Plan{Image: testImage, Boxes: []reconcile.BoxPlan{{Name: "alpha", Action: reconcile.Recreate, GateOnly: true, State: spec.Running,
		Reasons: []reconcile.Reason{{Kind: "config", Field: "egress", Old: "open", New: "none"}}}}}
	if err := a.Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	want := []string{"record", "replace gate", "start " + testImage, "ready", "init", "done"}
	if got := j.of("alpha"); !reflect.DeepEqual(got, want) {
		t.Errorf("steps %q, want %q", got, want)
	}
}
