package reconcile_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
)

// sized is an engine's snapshot that knows its machine: cpus CPUs and
// memory bytes, as docker info reports them.
func sized(o *engine.Observed, cpus int, memory int64) *engine.Observed {
	o.CPUs, o.Memory = cpus, memory
	return o
}

// asking is b asking for cpus and memory, written at lines 7 and 8 of boxes.yaml.
func asking(b spec.Box, cpus float64, memory int64) spec.Box {
	b.CPUs, b.Memory = cpus, memory
	b.CPUsAt = spec.Pos{File: "boxes.yaml", Line: 7, Col: 11}
	b.MemoryAt = spec.Pos{File: "boxes.yaml", Line: 8, Col: 13}
	return b
}

// A box the plan would create, recreate, start or move onto a host that
// has fewer CPUs or less memory than it asks for is a plan error naming
// the box, where the value is written, the host and what the host has:
// the engine refuses the CPUs (at create and at every start), and a memory
// limit above the machine's limits nothing.
func TestNewPlanHostLimits(t *testing.T) {
	for _, c := range []struct {
		name string
		in   func(t *testing.T) reconcile.Input
		want []string // parts of the error; none for a plan
	}{
		{
			name: "create with more CPUs than the host",
			in: func(t *testing.T) reconcile.Input {
				return reconcile.Input{Config: testCfg(asking(testBox("alpha"), 64, 4*gib)), Image: testImage,
					Observed: obsMap(sized(emptyObserved(), 2, 8*gib))}
			},
			want: []string{"box alpha asks for cpus: 64 (boxes.yaml:7:11), but the local engine has 2 CPUs"},
		},
		{
			name: "create with more memory than a remote host",
			in: func(t *testing.T) reconcile.Input {
				b := asking(testBox("beta"), 2, 64*gib)
				b.Host = "nexus"
				cfg := testCfg(b)
				cfg.Hosts = map[string]spec.Host{"nexus": {Name: "nexus", Docker: "ssh://me@nexus"}}
				return reconcile.Input{Config: cfg, Image: testImage, Observed: map[string]*engine.Observed{
					"": sized(emptyObserved(), 64, 256*gib), "nexus": sized(emptyObserved(), 4, 15*gib+gib/2)}}
			},
			want: []string{"box beta asks for memory: 64GiB (boxes.yaml:8:13), but host nexus has 15.5 GiB"},
		},
		{
			name: "both, for two boxes, each named",
			in: func(t *testing.T) reconcile.Input {
				return reconcile.Input{Config: testCfg(asking(testBox("alpha"), 3, 4*gib), asking(testBox("beta"), 1, 9*gib)), Image: testImage,
					Observed: obsMap(sized(emptyObserved(), 2, 8*gib))}
			},
			want: []string{"box alpha asks for cpus: 3 (boxes.yaml:7:11), but the local engine has 2 CPUs", "box beta asks for memory: 9GiB (boxes.yaml:8:13), but the local engine has 8.0 GiB"},
		},
		{
			name: "recreate to more CPUs than the host",
			in: func(t *testing.T) reconcile.Input {
				o := sized(emptyObserved(), 2, 8*gib)
				observeBox(t, o, testBox("alpha"), testImage, "running", 0)
				return reconcile.Input{Config: testCfg(asking(testBox("alpha"), 4, 4*gib)), Image: testImage, Tokens: map[string]string{"alpha": testToken},
					Observed: obsMap(o)}
			},
			want: []string{"box alpha asks for cpus: 4 (boxes.yaml:7:11), but the local engine has 2 CPUs"},
		},
		{
			name: "start of a box the host has shrunk under",
			in: func(t *testing.T) reconcile.Input {
				b := asking(testBox("alpha"), 4, 4*gib)
				o := sized(emptyObserved(), 2, 8*gib)
				observeBox(t, o, b, testImage, "exited", 0)
				return reconcile.Input{Config: testCfg(b), Image: testImage, Tokens: map[string]string{"alpha": testToken}, Observed: obsMap(o)}
			},
			want: []string{"box alpha asks for cpus: 4"},
		},
		{
			name: "move to a smaller host",
			in: func(t *testing.T) reconcile.Input {
				in, _ := moveInput(t, true, "running")
				in.Config.Boxes[0] = asking(in.Config.Boxes[0], 4, 4*gib)
				in.Observed["far"] = sized(in.Observed["far"], 2, 8*gib)
				return in
			},
			want: []string{"box alpha asks for cpus: 4 (boxes.yaml:7:11), but host far has 2 CPUs"},
		},
		{
			name: "exactly what the host has",
			in: func(t *testing.T) reconcile.Input {
				return reconcile.Input{Config: testCfg(asking(testBox("alpha"), 2, 8*gib)), Image: testImage,
					Observed: obsMap(sized(emptyObserved(), 2, 8*gib))}
			},
		},
		{
			name: "a host whose size is not known (boxes diff)",
			in: func(t *testing.T) reconcile.Input {
				return reconcile.Input{Config: testCfg(asking(testBox("alpha"), 64, 64*gib)), Image: testImage, Observed: obsMap(emptyObserved())}
			},
		},
		{
			name: "a running box is left alone",
			in: func(t *testing.T) reconcile.Input {
				b := asking(testBox("alpha"), 4, 4*gib)
				o := sized(emptyObserved(), 2, 8*gib)
				observeBox(t, o, b, testImage, "running", 0)
				return reconcile.Input{Config: testCfg(b), Image: testImage, Tokens: map[string]string{"alpha": testToken}, Observed: obsMap(o)}
			},
		},
		{
			name: "a box left out by --target",
			in: func(t *testing.T) reconcile.Input {
				return reconcile.Input{Config: testCfg(asking(testBox("alpha"), 64, 4*gib), testBox("beta")), Image: testImage,
					Target: map[string]bool{"beta": true}, Observed: obsMap(sized(emptyObserved(), 2, 8*gib))}
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) { planRefused(t, c.in(t), c.want, reconcile.ErrOverHost, "host:") })
	}
}

// The machine's size changes on its own (a VM's memory balloon): a saved
// plan stays fresh through it.
func TestFingerprintLeavesOutHostSize(t *testing.T) {
	files := map[string]string{"boxes.yaml": "x"}
	a := map[string]*engine.Observed{"": sized(emptyObserved(), 2, 8*gib)}
	b := map[string]*engine.Observed{"": sized(emptyObserved(), 4, 7*gib)}
	if reconcile.Fingerprint(files, testFleet, a, nil) != reconcile.Fingerprint(files, testFleet, b, nil) {
		t.Error("the host's CPUs and memory changed the fingerprint")
	}
}

// planRefused checks that NewPlan(in) plans when want is empty, else fails
// with sentinel and an error holding each of want, with one hint that
// names each of hints.
func planRefused(t *testing.T, in reconcile.Input, want []string, sentinel error, hints ...string) {
	t.Helper()
	p, err := reconcile.NewPlan(in)
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("NewPlan: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("planned %+v, want an error", p.Boxes)
	}
	if !errors.Is(err, sentinel) {
		t.Errorf("%v is not %v", err, sentinel)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\nwant %q", err, w)
		}
	}
	h := hint.Lines(err)
	if len(h) != 1 {
		t.Fatalf("hints %q", h)
	}
	for _, w := range hints {
		if !strings.Contains(h[0], w) {
			t.Errorf("hint %q lacks %q", h[0], w)
		}
	}
}
