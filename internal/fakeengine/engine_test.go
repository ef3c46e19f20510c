package fakeengine_test

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/fakeengine"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
)

var image = "sha256:" + strings.Repeat("ab", 32)

// A box made and started on the fake engine is what the planner expects of
// Docker: its resources under compose's names, with boxes' labels and the
// config hashes the planner predicts, so that the next plan changes nothing;
// and a second connection, as the next boxes command makes, sees the same.
func TestMadeBoxPlansNoChange(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "boxes.yaml")
	cfg, err := spec.Parse(file, []byte("version: 1\nfleet: main\nboxes:\n  alpha: {env: {TZ: UTC}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Path = file
	state := filepath.Join(dir, "engines.json")
	if err := fakeengine.Edit(state, func(s *fakeengine.State) error { s.AddImage("", image); return nil }); err != nil {
		t.Fatal(err)
	}
	e, err := (&fakeengine.Connector{Path: state}).Connect(t.Context(), spec.Host{})
	if err != nil {
		t.Fatal(err)
	}
	box := cfg.Boxes[0]
	tokens := map[string]string{"alpha": "tok"}
	p, err := compose.Project(compose.Input{Box: box, Image: image, Token: "tok", WorkDir: dir, ConfigFile: file})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Create(t.Context(), p, false); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	url, err := e.WaitReady(t.Context(), "alpha", "tok")
	if err != nil || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Errorf("WaitReady: %q, %v", url, err)
	}
	if err := e.WaitInit(t.Context(), "alpha"); err != nil {
		t.Errorf("WaitInit: %v", err)
	}

	again, err := (&fakeengine.Connector{Path: state}).Connect(t.Context(), spec.Host{})
	if err != nil {
		t.Fatal(err)
	}
	o, err := again.Observe(t.Context(), image)
	if err != nil {
		t.Fatal(err)
	}
	r := o.Of("alpha")
	var names []string
	for _, c := range r.Containers {
		names = append(names, c.Name)
		if c.State != "running" || c.Fleet != "main" || c.Image != image || c.Labels[compose.ManagedLabel] != "1" {
			t.Errorf("container %s: state %s, fleet %q, image %s, labels %v", c.Name, c.State, c.Fleet, c.Image, c.Labels)
		}
	}
	for _, n := range r.Networks {
		names = append(names, n.Name)
	}
	for _, v := range r.Volumes {
		names = append(names, v.Name)
	}
	want := []string{
		compose.ContainerName("alpha", compose.AgentService), compose.ContainerName("alpha", compose.ExecutorService), compose.ContainerName("alpha", compose.GateService),
		compose.NetworkName("alpha"), compose.InsideNetworkName("alpha"),
		compose.VolumeName("alpha", compose.AgentVolume), compose.VolumeName("alpha", compose.ExecutorVolume),
	}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("resources: %q, want %q", names, want)
	}
	if !o.Images[image] {
		t.Errorf("the engine lacks the image it was given")
	}

	plan, err := reconcile.NewPlan(reconcile.Input{Config: cfg, Image: image, Observed: map[string]*engine.Observed{"": o}, Tokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Boxes) != 1 || plan.Boxes[0].Action != reconcile.NoOp {
		t.Errorf("plan after the box was made: %+v", plan.Boxes)
	}
}

// A connector with no path keeps its state in memory; it counts each
// host's calls by name and adds up their latency, and a host down fails
// to connect as docker.Connect does, naming it.
func TestMemoryConnector(t *testing.T) {
	c := &fakeengine.Connector{Latency: map[string]time.Duration{"slow": 2 * time.Millisecond}, Down: map[string]bool{"off": true}}
	slow, err := c.Connect(t.Context(), spec.Host{Name: "slow", Docker: "ssh://x@192.0.2.1"})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := slow.Observe(t.Context(), image); err != nil {
			t.Fatal(err)
		}
	}
	local, err := c.Connect(t.Context(), spec.Host{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := local.ContainerEnv(t.Context(), "nothing"); err == nil {
		t.Errorf("ContainerEnv of no container: no error")
	}
	_, err = c.Connect(t.Context(), spec.Host{Name: "off", Docker: "ssh://x@192.0.2.9"})
	if err == nil || err.Error() != `host off (ssh://x@192.0.2.9): connect: connection refused (fake engine: down)` || !errors.Is(err, engine.ErrUnreachable) {
		t.Errorf("connecting to a host down: %v", err)
	}
	want := map[string]map[string]int64{
		"slow": {"Connect": 1, "Observe": 2},
		"":     {"Connect": 1, "ContainerEnv": 1},
		"off":  {"Connect": 1},
	}
	if got := c.Calls(); !reflect.DeepEqual(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
	if got := c.Waited(); got != 6*time.Millisecond {
		t.Errorf("waited %v, want 6ms (3 calls to the slow host)", got)
	}
	c.ResetCalls()
	if len(c.Calls()) != 0 || c.Waited() != 0 {
		t.Errorf("after ResetCalls: %v, %v", c.Calls(), c.Waited())
	}
	var hosts int
	if err := c.Edit(func(s *fakeengine.State) error { hosts = len(s.Hosts); return nil }); err != nil || hosts != 2 {
		t.Errorf("the state in memory: %d hosts (%v), want the two connected", hosts, err)
	}
}
