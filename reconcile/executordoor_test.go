package reconcile_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
)

// withExecutorDoor is b with the executor behind the gate.
func withExecutorDoor(b spec.Box, egress spec.Egress, private ...spec.Destination) spec.Box {
	b.Executor.Door = true
	b.Executor.Egress = egress
	b.Executor.Private = private
	return b
}

// A change of the executor's rules alone remakes the gate alone, as a
// change of the agent's does, and the plan says what changed on which side.
func TestPlanExecutorRuleChangeIsGateOnly(t *testing.T) {
	list := spec.Egress{Mode: spec.EgressList, Allow: destinations(t, "api.github.com", "registry.npmjs.org")}
	o := emptyObserved()
	observeBox(t, o, withExecutorDoor(testBox("alpha"), spec.Egress{Mode: spec.EgressOpen}), testImage, "running", 0)
	b := withExecutorDoor(testBox("alpha"), list, destinations(t, "10.0.0.0/8:5432")...)
	p, bp := planOne(t, b, o, nil)
	if bp.Action != reconcile.Recreate || !bp.GateOnly || bp.ExecutorAndGate {
		t.Fatalf("plan %s gate only %v executor and gate %v %q, want a gate-only recreate", bp.Action, bp.GateOnly, bp.ExecutorAndGate, reasonTexts(bp))
	}
	want := []string{
		"executor.egress: open → 2 destinations (+ api.github.com, + registry.npmjs.org)",
		"executor.private: none → 1 exception (+ 10.0.0.0/8:5432)",
	}
	if got := reasonTexts(bp); !reflect.DeepEqual(got, want) {
		t.Errorf("reasons %q, want %q", got, want)
	}
	var text bytes.Buffer
	p.RenderText(&text, false)
	if !strings.Contains(text.String(), "# alpha's gate must be replaced: the agent keeps running") {
		t.Errorf("text:\n%s", text.String())
	}

	// Planned again once made so: nothing to do.
	o = emptyObserved()
	observeBox(t, o, b, testImage, "running", 0)
	if _, bp := planOne(t, b, o, nil); bp.Action != reconcile.NoOp {
		t.Errorf("a box as declared: %s %q", bp.Action, reasonTexts(bp))
	}
	// The agent's rules and the executor's changed together: still the gate alone.
	b2 := b
	b2.Egress = spec.Egress{Mode: spec.EgressNone}
	b2.Executor.Egress = spec.Egress{Mode: spec.EgressNone}
	if _, bp := planOne(t, b2, o, nil); !bp.GateOnly || len(bp.Reasons) != 2 {
		t.Errorf("both sides' rules: gate only %v %q", bp.GateOnly, reasonTexts(bp))
	}
}

// Giving the executor its door, or taking it away, remakes the executor
// and the gate, never the agent, saying so.
func TestPlanExecutorDoorGivenOrTaken(t *testing.T) {
	plain := testBox("alpha")
	gated := withExecutorDoor(testBox("alpha"), spec.Egress{Mode: spec.EgressList, Allow: destinations(t, "api.github.com")})
	for _, tc := range []struct {
		name      string
		from, to  spec.Box
		reasons   []string
		published string // the container that publishes the port before
	}{
		{"given", plain, gated, []string{
			"the executor's door: the executor moves to a network with no route out and reaches out only through the gate, which publishes its port",
			"executor.egress: open (no door) → 1 destination (+ api.github.com)",
		}, compose.ExecutorService},
		{"taken", gated, plain, []string{
			"the executor's door goes: the executor gets its own network access back and publishes its port itself",
			"executor.egress: 1 destination → open (no door) (− api.github.com)",
		}, compose.GateService},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := emptyObserved()
			observeBox(t, o, tc.from, testImage, "running", 0)
			p, bp := planOne(t, tc.to, o, nil)
			if bp.Action != reconcile.Recreate || bp.GateOnly || !bp.ExecutorAndGate {
				t.Fatalf("plan %s gate only %v executor and gate %v %q", bp.Action, bp.GateOnly, bp.ExecutorAndGate, reasonTexts(bp))
			}
			if got := reasonTexts(bp); !reflect.DeepEqual(got, tc.reasons) {
				t.Errorf("reasons %q, want %q", got, tc.reasons)
			}
			// The port the box has is kept, whichever container published it.
			if bp.HostPort != autoPort {
				t.Errorf("host port %d, want the one %s published, %d", bp.HostPort, tc.published, autoPort)
			}
			var text bytes.Buffer
			p.RenderText(&text, false)
			if !strings.Contains(text.String(), "# alpha's executor and gate must be replaced: the agent keeps running") || strings.Contains(text.String(), "forces replacement") {
				t.Errorf("text:\n%s", text.String())
			}
			var j struct {
				Boxes []struct {
					Actions         []string `json:"actions"`
					ExecutorAndGate bool     `json:"executor_and_gate"`
				} `json:"boxes"`
			}
			raw, _ := json.Marshal(p.JSON())
			if err := json.Unmarshal(raw, &j); err != nil || len(j.Boxes) != 1 || !j.Boxes[0].ExecutorAndGate || !reflect.DeepEqual(j.Boxes[0].Actions, []string{"update"}) {
				t.Errorf("plan --json: %s", raw)
			}
			// Another change beside it remakes the whole box.
			to := tc.to
			to.Env = map[string]string{"TZ": "Europe/Berlin"}
			if _, bp := planOne(t, to, o, nil); bp.ExecutorAndGate || bp.GateOnly {
				t.Errorf("with env changed too: %q", reasonTexts(bp))
			}
		})
	}
}

// With the executor behind its door, the gate publishes its port: a box so
// made and running is as declared, and a gate published elsewhere is drift.
func TestPlanExecutorDoorPublishedByTheGate(t *testing.T) {
	b := withExecutorDoor(testBox("alpha"), spec.Egress{Mode: spec.EgressNone})
	b.Executor.Port = 4801
	o := emptyObserved()
	observeBox(t, o, b, testImage, "running", 0)
	gate, ok := o.Of(b.Name).Container(compose.GateService)
	if !ok || len(gate.Ports) != 1 || gate.Ports[0].HostPort != 4801 {
		t.Fatalf("observed gate %+v", gate)
	}
	if exec, _ := o.Of(b.Name).Container(compose.ExecutorService); len(exec.Ports) != 0 {
		t.Fatalf("observed executor publishes %+v", exec.Ports)
	}
	if _, bp := planOne(t, b, o, nil); bp.Action != reconcile.NoOp {
		t.Fatalf("a box as declared: %s %q", bp.Action, reasonTexts(bp))
	}
	for i, c := range o.Containers {
		if c.Service == compose.GateService {
			o.Containers[i].Ports[0].HostIP = "0.0.0.0"
		}
	}
	_, bp := planOne(t, b, o, nil)
	if bp.Action != reconcile.Recreate || !reconcile.HasKind(bp.Reasons, "published") || !strings.Contains(strings.Join(reasonTexts(bp), "\n"), "gate published on 0.0.0.0:4801, declared 127.0.0.1:4801") {
		t.Errorf("a gate published elsewhere: %s %q", bp.Action, reasonTexts(bp))
	}
}

// A box being created shows the executor's door beside the agent's.
func TestNewDoorShowsTheExecutorsDoor(t *testing.T) {
	b := withExecutorDoor(testBox("alpha"), spec.Egress{Mode: spec.EgressList, Allow: destinations(t, "api.github.com", "*.npmjs.org")}, destinations(t, "10.0.0.5:5432")...)
	p, bp := planOne(t, b, emptyObserved(), nil)
	if bp.Door == nil || bp.Door.Executor == nil || bp.Door.Executor.Egress != "list" || len(bp.Door.Executor.Allow) != 2 || len(bp.Door.Executor.Private) != 1 {
		t.Fatalf("door %+v", bp.Door)
	}
	var text bytes.Buffer
	p.RenderText(&text, false)
	for _, want := range []string{
		"+ egress      = every public address (egress: open)",
		"+ executor    = api.github.com, *.npmjs.org (executor: egress:, through the gate)",
		"+ executor    = private: 10.0.0.5:5432",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	// Without a door, no executor line.
	p, bp = planOne(t, testBox("alpha"), emptyObserved(), nil)
	text.Reset()
	p.RenderText(&text, false)
	if bp.Door.Executor != nil || strings.Contains(text.String(), "+ executor") {
		t.Errorf("a box without the executor's door:\n%s", text.String())
	}
}

// The executor's network gone from under a box whose gate was made with
// the executor's door is a reason of its own, as the inside network's is.
func TestPlanExecutorNetworkMissing(t *testing.T) {
	b := withExecutorDoor(testBox("alpha"), spec.Egress{Mode: spec.EgressNone})
	o := emptyObserved()
	observeBox(t, o, b, testImage, "running", 0)
	kept := o.Networks[:0]
	for _, n := range o.Networks {
		if n.Name != compose.ExecutorNetworkName(b.Name) {
			kept = append(kept, n)
		}
	}
	o.Networks = kept
	_, bp := planOne(t, b, o, nil)
	if bp.Action != reconcile.Recreate || !strings.Contains(strings.Join(reasonTexts(bp), "\n"), "network hbl-alpha_exec is missing") {
		t.Errorf("plan %s %q", bp.Action, reasonTexts(bp))
	}
}
