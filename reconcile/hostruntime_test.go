package reconcile_test

import (
	"testing"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
)

// runcOnly are the runtimes docker info lists for an engine with nothing
// registered: Docker Engine 20.10's own.
var runcOnly = []string{"io.containerd.runc.v2", "io.containerd.runtime.v1.linux", "runc"}

// withRuntimes is an engine's snapshot that knows its runtimes.
func withRuntimes(o *engine.Observed, names ...string) *engine.Observed {
	o.Runtimes = names
	return o
}

// running is b with runtime: name, written at line 9 of boxes.yaml.
func running(b spec.Box, name string) spec.Box {
	b.Runtime = name
	b.RuntimeAt = spec.Pos{File: "boxes.yaml", Line: 9, Col: 14}
	return b
}

// A box the plan would create, recreate, start or move onto a host whose
// engine lacks its runtime: is a plan error naming the box, where the
// value is written, the host and the runtimes it has: the engine would
// refuse the containers only after the box's network and volumes exist.
func TestNewPlanMissingRuntime(t *testing.T) {
	for _, c := range []struct {
		name string
		in   func(t *testing.T) reconcile.Input
		want []string // parts of the error; none for a plan
	}{
		{
			name: "create on the local engine",
			in: func(t *testing.T) reconcile.Input {
				return reconcile.Input{Config: testCfg(running(testBox("alpha"), "runsc")), Image: testImage,
					Observed: obsMap(withRuntimes(emptyObserved(), runcOnly...))}
			},
			want: []string{"box alpha asks for runtime: runsc (boxes.yaml:9:14), but the local engine has only io.containerd.runc.v2, io.containerd.runtime.v1.linux, runc"},
		},
		{
			name: "create on a remote host, the local one having it",
			in: func(t *testing.T) reconcile.Input {
				b := running(testBox("beta"), "runsc")
				b.Host = "nexus"
				cfg := testCfg(b)
				cfg.Hosts = map[string]spec.Host{"nexus": {Name: "nexus", Docker: "ssh://me@nexus"}}
				return reconcile.Input{Config: cfg, Image: testImage, Observed: map[string]*engine.Observed{
					"": withRuntimes(emptyObserved(), "runc", "runsc"), "nexus": withRuntimes(emptyObserved(), "runc")}}
			},
			want: []string{"box beta asks for runtime: runsc (boxes.yaml:9:14), but host nexus has only runc"},
		},
		{
			name: "two boxes, each named",
			in: func(t *testing.T) reconcile.Input {
				return reconcile.Input{Config: testCfg(running(testBox("alpha"), "runsc"), running(testBox("beta"), "kata"), testBox("gamma")), Image: testImage,
					Observed: obsMap(withRuntimes(emptyObserved(), "runc"))}
			},
			want: []string{"box alpha asks for runtime: runsc", "box beta asks for runtime: kata"},
		},
		{
			name: "recreate onto a runtime the host lacks",
			in: func(t *testing.T) reconcile.Input {
				o := withRuntimes(emptyObserved(), "runc")
				observeBox(t, o, testBox("alpha"), testImage, "running", 0)
				return reconcile.Input{Config: testCfg(running(testBox("alpha"), "runsc")), Image: testImage, Tokens: map[string]string{"alpha": testToken},
					Observed: obsMap(o)}
			},
			want: []string{"box alpha asks for runtime: runsc (boxes.yaml:9:14), but the local engine has only runc"},
		},
		{
			name: "start of a box whose host lost its runtime",
			in: func(t *testing.T) reconcile.Input {
				b := running(testBox("alpha"), "runsc")
				o := withRuntimes(emptyObserved(), "runc")
				observeBox(t, o, b, testImage, "exited", 0)
				return reconcile.Input{Config: testCfg(b), Image: testImage, Tokens: map[string]string{"alpha": testToken}, Observed: obsMap(o)}
			},
			want: []string{"box alpha asks for runtime: runsc"},
		},
		{
			name: "move to a host without it",
			in: func(t *testing.T) reconcile.Input {
				in, _ := moveInput(t, true, "running")
				in.Config.Boxes[0] = running(in.Config.Boxes[0], "runsc")
				in.Observed["far"] = withRuntimes(in.Observed["far"], "runc")
				return in
			},
			want: []string{"box alpha asks for runtime: runsc (boxes.yaml:9:14), but host far has only runc"},
		},
		{
			name: "a runtime inherited from defaults, where defaults writes it",
			in: func(t *testing.T) reconcile.Input {
				b := testBox("alpha")
				b.Runtime, b.RuntimeAt = "runsc", spec.Pos{File: "boxes.yaml", Line: 4, Col: 12}
				return reconcile.Input{Config: testCfg(b), Image: testImage, Observed: obsMap(withRuntimes(emptyObserved(), "runc"))}
			},
			want: []string{"box alpha asks for runtime: runsc (boxes.yaml:4:12)"},
		},
		{
			name: "the host has it",
			in: func(t *testing.T) reconcile.Input {
				return reconcile.Input{Config: testCfg(running(testBox("alpha"), "runsc")), Image: testImage,
					Observed: obsMap(withRuntimes(emptyObserved(), "runc", "runsc"))}
			},
		},
		{
			name: "no runtime: is the engine's default",
			in: func(t *testing.T) reconcile.Input {
				return reconcile.Input{Config: testCfg(testBox("alpha")), Image: testImage, Observed: obsMap(withRuntimes(emptyObserved(), "runc"))}
			},
		},
		{
			name: "a host whose runtimes are not known (boxes diff)",
			in: func(t *testing.T) reconcile.Input {
				return reconcile.Input{Config: testCfg(running(testBox("alpha"), "runsc")), Image: testImage, Observed: obsMap(emptyObserved())}
			},
		},
		{
			name: "a running box is left alone",
			in: func(t *testing.T) reconcile.Input {
				b := running(testBox("alpha"), "runsc")
				o := withRuntimes(emptyObserved(), "runc")
				observeBox(t, o, b, testImage, "running", 0)
				return reconcile.Input{Config: testCfg(b), Image: testImage, Tokens: map[string]string{"alpha": testToken}, Observed: obsMap(o)}
			},
		},
		{
			name: "a box left out by --target",
			in: func(t *testing.T) reconcile.Input {
				return reconcile.Input{Config: testCfg(running(testBox("alpha"), "runsc"), testBox("beta")), Image: testImage,
					Target: map[string]bool{"beta": true}, Observed: obsMap(withRuntimes(emptyObserved(), "runc"))}
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) { planRefused(t, c.in(t), c.want, reconcile.ErrNoRuntime, "daemon.json", "host:") })
	}
}

// A runtime registered on a host (or removed from it) changes nothing a
// saved plan does: a box that needs a missing one is a plan error, not a
// stale plan.
func TestFingerprintLeavesOutRuntimes(t *testing.T) {
	files := map[string]string{"boxes.yaml": "x"}
	a := map[string]*engine.Observed{"": withRuntimes(emptyObserved(), "runc")}
	b := map[string]*engine.Observed{"": withRuntimes(emptyObserved(), "runc", "runsc")}
	if reconcile.Fingerprint(files, testFleet, a, nil) != reconcile.Fingerprint(files, testFleet, b, nil) {
		t.Error("the host's runtimes changed the fingerprint")
	}
}
