package reconcile_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
)

// edit changes box name's container of service in o.
func edit(o *engine.Observed, name, service string, f func(*engine.Container)) {
	for i := range o.Containers {
		if o.Containers[i].Box == name && o.Containers[i].Service == service {
			f(&o.Containers[i])
		}
	}
}

// driftPlan has one box per kind of drift Docker can show while boxes.yaml
// and boxes.lock stay the same.
func driftPlan(t *testing.T) *reconcile.Plan {
	t.Helper()
	o := emptyObserved()
	var boxes []spec.Box
	add := func(name string, state engine.State, f func()) {
		b := testBox(name)
		boxes = append(boxes, b)
		observeBox(t, o, b, testImage, state, 0)
		if f != nil {
			f()
		}
	}
	add("crashloop", "running", func() {
		edit(o, "crashloop", compose.AgentService, func(c *engine.Container) {
			c.State, c.ExitCode, c.Restarts, c.Ports = "restarting", 127, 14, nil
		})
	})
	// A loop observed in the instant the container runs between two restarts.
	add("looprunning", "running", func() {
		edit(o, "looprunning", compose.AgentService, func(c *engine.Container) { c.State, c.ExitCode, c.Restarts = "restarting", 0, 3 })
	})
	add("crashed", "running", func() {
		edit(o, "crashed", compose.AgentService, func(c *engine.Container) { c.State, c.ExitCode, c.Restarts = "exited", 1, 0 })
	})
	add("oom", "running", func() {
		edit(o, "oom", compose.AgentService, func(c *engine.Container) {
			c.State, c.ExitCode, c.OOMKilled, c.Restarts = "restarting", 137, true, 3
		})
	})
	add("toolong", "running", func() {
		edit(o, "toolong", compose.AgentService, func(c *engine.Container) {
			c.State, c.ExitCode, c.Restarts = "restarting", 127, 1
			c.Error = "exec /usr/bin/tini: argument list too long"
		})
	})
	add("nonet", "running", func() {
		var keep []engine.Network
		for _, n := range o.Networks {
			if n.Box != "nonet" {
				keep = append(keep, n)
			}
		}
		o.Networks = keep
	})
	add("unplugged", "running", func() {
		edit(o, "unplugged", compose.ExecutorService, func(c *engine.Container) { c.Networks = nil })
	})
	add("elsewhere", "running", func() {
		edit(o, "elsewhere", compose.ExecutorService, func(c *engine.Container) {
			c.Ports = []engine.Port{{HostIP: "0.0.0.0", HostPort: 4799, ContainerPort: compose.ExecutorPort}, {HostIP: "::", HostPort: 4799, ContainerPort: compose.ExecutorPort}}
		})
	})
	fixed := testBox("fixedport")
	fixed.Executor.Port = 4800
	boxes = append(boxes, fixed)
	observeBox(t, o, fixed, testImage, "running", 4801)
	add("noscratch", "running", func() {
		var keep []engine.Volume
		for _, v := range o.Volumes {
			if v.Name != compose.VolumeName("noscratch", compose.ExecutorVolume) {
				keep = append(keep, v)
			}
		}
		o.Volumes = keep
	})
	add("paused", "running", func() {
		edit(o, "paused", compose.AgentService, func(c *engine.Container) { c.State = "paused" })
	})
	add("userstop", "exited", func() {
		edit(o, "userstop", compose.AgentService, func(c *engine.Container) { c.ExitCode = 143 })
		edit(o, "userstop", compose.ExecutorService, func(c *engine.Container) { c.ExitCode = 0 })
	})
	// A container stopped beside an agent that runs: it alone is started,
	// and the plan names it; a gate alone leaves the agent running (cut
	// off). An agent stopped is the box stopped, whatever else runs.
	add("gatekilled", "running", func() {
		edit(o, "gatekilled", compose.GateService, func(c *engine.Container) { c.State, c.ExitCode, c.Ports = "exited", 137, nil })
	})
	add("gatepaused", "running", func() {
		edit(o, "gatepaused", compose.GateService, func(c *engine.Container) { c.State = "paused" })
	})
	add("execstopped", "running", func() {
		edit(o, "execstopped", compose.ExecutorService, func(c *engine.Container) { c.State, c.ExitCode, c.Ports = "exited", 143, nil })
	})
	add("stoppedagent", "running", func() {
		for _, service := range []string{compose.AgentService, compose.ExecutorService} {
			edit(o, "stoppedagent", service, func(c *engine.Container) { c.State, c.ExitCode, c.Ports = "exited", 137, nil })
		}
	})
	add("neverstarted", "created", nil)
	add("nocontainers", "running", func() {
		var keep []engine.Container
		for _, c := range o.Containers {
			if c.Box != "nocontainers" {
				keep = append(keep, c)
			}
		}
		o.Containers = keep
	})
	add("renamed", "created", func() {
		edit(o, "renamed", compose.AgentService, func(c *engine.Container) { c.Name = "0123456789ab_" + c.Name })
	})
	add("healthy", "running", nil)
	// Declared stopped and restarting: stopping it is the change, not a recreate.
	quiet := testBox("quiet")
	quiet.State = spec.Stopped
	boxes = append(boxes, quiet)
	observeBox(t, o, quiet, testImage, "running", 0)
	edit(o, "quiet", compose.AgentService, func(c *engine.Container) { c.State, c.ExitCode, c.Restarts = "restarting", 2, 5 })

	tokens := map[string]string{}
	for _, b := range boxes {
		tokens[b.Name] = testToken
	}
	p, err := reconcile.NewPlan(reconcile.Input{Config: testCfg(boxes...), Image: testImage, Observed: obsMap(o), Tokens: tokens})
	if err != nil {
		t.Fatalf("NewPlan: %v", err)
	}
	return p
}

func TestDriftGolden(t *testing.T) {
	p := driftPlan(t)
	want := map[string]reconcile.Action{
		"crashloop": reconcile.Recreate, "looprunning": reconcile.Recreate, "crashed": reconcile.Recreate, "oom": reconcile.Recreate, "toolong": reconcile.Recreate,
		"nonet": reconcile.Recreate, "unplugged": reconcile.Recreate, "elsewhere": reconcile.Recreate, "fixedport": reconcile.Recreate,
		"noscratch": reconcile.Recreate, "nocontainers": reconcile.Recreate, "renamed": reconcile.Recreate,
		"paused": reconcile.Start, "userstop": reconcile.Start, "neverstarted": reconcile.Start,
		"gatekilled": reconcile.Start, "gatepaused": reconcile.Start, "execstopped": reconcile.Start, "stoppedagent": reconcile.Start,
		"healthy": reconcile.NoOp, "quiet": reconcile.Stop,
	}
	for _, b := range p.Boxes {
		if want[b.Name] != b.Action {
			t.Errorf("%s: action %s, want %s (reasons %v)", b.Name, b.Action, want[b.Name], b.Reasons)
		}
		if gateOnly := b.Name == "gatekilled" || b.Name == "gatepaused"; b.GateOnly != gateOnly {
			t.Errorf("%s: gate only %v, want %v", b.Name, b.GateOnly, gateOnly)
		}
	}
	if len(p.Boxes) != len(want) {
		t.Errorf("%d boxes planned, want %d", len(p.Boxes), len(want))
	}
	var buf bytes.Buffer
	p.RenderText(&buf, false)
	golden(t, "drift.txt", buf.Bytes())
	buf.Reset()
	if err := p.RenderJSON(&buf); err != nil {
		t.Fatal(err)
	}
	golden(t, "drift.json", buf.Bytes())
	// A pull request's table says the same of the gate started alone.
	buf.Reset()
	p.RenderMarkdownView(&buf, reconcile.MarkdownView{Title: "boxes plan"})
	if want := "| `~` | `gatekilled` | start the gate (the agent keeps running) | gate: stopped (exit 137) → running |"; !strings.Contains(buf.String(), want) {
		t.Errorf("markdown lacks %q:\n%s", want, buf.String())
	}
}

func TestMissingDataVolume(t *testing.T) {
	mk := func(replace bool) reconcile.Input {
		o := emptyObserved()
		observeBox(t, o, testBox("web"), testImage, "running", 0)
		var keep []engine.Volume
		for _, v := range o.Volumes {
			if v.Name != compose.VolumeName("web", compose.AgentVolume) {
				keep = append(keep, v)
			}
		}
		o.Volumes = keep
		return reconcile.Input{Config: testCfg(testBox("web")), Image: testImage, Observed: obsMap(o),
			Tokens: map[string]string{"web": testToken}, Replace: map[string]bool{"web": replace}}
	}
	_, err := reconcile.NewPlan(mk(false))
	if !errors.Is(err, reconcile.ErrVolumeMissing) {
		t.Fatalf("err = %v, want ErrVolumeMissing", err)
	}
	if !strings.Contains(err.Error(), "hbl-web_agent-data is missing") || !strings.Contains(err.Error(), "--replace web") {
		t.Errorf("err %q does not name the volume and the way out", err)
	}
	p, err := reconcile.NewPlan(mk(true))
	if err != nil {
		t.Fatalf("with --replace: %v", err)
	}
	var buf bytes.Buffer
	p.RenderText(&buf, false)
	if p.Boxes[0].Action != reconcile.Recreate || !strings.Contains(buf.String(), "volume hbl-web_agent-data is missing: the box starts with an empty /data") {
		t.Errorf("with --replace:\n%s", buf.String())
	}
}

func TestStablePlanIgnoresRestartCount(t *testing.T) {
	p := driftPlan(t)
	q := driftPlan(t)
	for i := range q.Boxes {
		for j := range q.Boxes[i].Reasons {
			q.Boxes[i].Reasons[j].Restarts += 7
		}
	}
	if !reflect.DeepEqual(p.Stable(), q.Stable()) {
		t.Error("stable plans differ in restart counts")
	}
	if p.Boxes[1].Name != "crashloop" || p.Boxes[1].Reasons[0].Restarts == 0 {
		t.Error("Stable changed the plan it was called on")
	}
}

// A running executor that publishes no port is drift on a Docker host
// (the port it should be published on), and nothing on a host whose
// engine publishes none (a cluster: its executor is reached through the
// API server).
func TestUnpublishedHostHasNoPortDrift(t *testing.T) {
	for _, tc := range []struct {
		name        string
		unpublished bool
		want        reconcile.Action
	}{{"a docker host", false, reconcile.Recreate}, {"a cluster", true, reconcile.NoOp}} {
		t.Run(tc.name, func(t *testing.T) {
			o := emptyObserved()
			b := testBox("noport")
			observeBox(t, o, b, testImage, "running", 0)
			edit(o, "noport", compose.ExecutorService, func(c *engine.Container) { c.Ports = nil })
			o.Unpublished = tc.unpublished
			p, err := reconcile.NewPlan(reconcile.Input{Config: testCfg(b), Image: testImage, Observed: obsMap(o), Tokens: map[string]string{b.Name: testToken}})
			if err != nil {
				t.Fatal(err)
			}
			bp := p.Boxes[0]
			if bp.Action != tc.want || (tc.want == reconcile.Recreate && !reconcile.HasKind(bp.Reasons, "published")) {
				t.Errorf("action %s, reasons %v", bp.Action, reasonTexts(bp))
			}
		})
	}
}
