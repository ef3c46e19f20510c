package workspace_test

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/workspace"
)

// Two host entries that reach one engine are refused when both are
// observed, by the engine of the later one, naming the first.
func TestObserveRefusesOneEngineUnderTwoHosts(t *testing.T) {
	f := newFleet(t)
	for _, h := range []string{"", "nexus", "zulu"} {
		f.snapshots[h] = &engine.Observed{}
	}
	f.ids = map[string]string{"": "ONE", "nexus": "TWO", "zulu": "TWO"}
	ws := f.open(t)
	if err := ws.Observe(t.Context(), "", "nexus"); err != nil {
		t.Errorf("two engines: %v", err)
	}
	err := ws.Observe(t.Context())
	if err == nil || err.Error() != "host nexus and host zulu are one engine" {
		t.Errorf("one engine under nexus and zulu: %v", err)
	}
	// Engines that do not say who they are are not compared.
	f.ids = map[string]string{}
	if err := f.open(t).Observe(t.Context()); err != nil {
		t.Errorf("engines without IDs: %v", err)
	}
}

// A plan that changes nothing reaches no engine.
func TestApplyNothing(t *testing.T) {
	f := newFleet(t)
	f.down = true
	ws := f.open(t)
	p := &reconcile.Plan{Boxes: []reconcile.BoxPlan{{Name: "gamma", Host: "nexus", Action: reconcile.NoOp}}}
	if err := ws.Apply(t.Context(), p, workspace.ApplyOptions{Parallelism: 1}); err != nil || len(f.connected) != 0 {
		t.Errorf("apply of a plan without changes: %v (connected to %q)", err, f.connected)
	}
}

// imageEngine is a fake engine that starts boxes and notes what it was
// asked of images: each saved, loaded (with the bytes read) or pulled.
type imageEngine struct {
	*fakeEngine
	asked *[]string
}

func (e imageEngine) note(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	*e.asked = append(*e.asked, e.host+": "+fmt.Sprintf(format, args...))
}
func (e imageEngine) SaveImage(_ context.Context, ref string) (string, io.ReadCloser, error) {
	e.note("save %s", ref)
	return "sha256:id", io.NopCloser(strings.NewReader("layers")), nil
}
func (e imageEngine) LoadImage(_ context.Context, ref, id string, r io.Reader) (int64, error) {
	b, err := io.ReadAll(r)
	e.note("load %s as %s: %s", ref, id, b)
	return int64(len(b)), err
}
func (e imageEngine) PullImage(_ context.Context, ref, image string) error {
	e.note("pull %s as %s", ref, image)
	return nil
}
func (e imageEngine) Start(context.Context, *types.Project) error { return nil }
func (e imageEngine) WaitReady(context.Context, string, string) (string, error) {
	return "http://127.0.0.1:4801", nil
}
func (e imageEngine) WaitInit(context.Context, string) error { return nil }

// The image a plan brings to a host is streamed from the engine that has
// it into the one that lacks it, or pulled there, before the boxes there
// that use it start.
func TestApplyBringsTheImage(t *testing.T) {
	image := "sha256:" + strings.Repeat("a", 64)
	local := ""
	for _, c := range []struct {
		transfer reconcile.ImageTransfer
		want     []string
	}{
		{reconcile.ImageTransfer{Image: image, To: "nexus", From: &local}, []string{": save " + image, "nexus: load " + image + " as sha256:id: layers"}},
		{reconcile.ImageTransfer{Image: image, To: "nexus", Pull: "r.example/h@sha256:b"}, []string{"nexus: pull r.example/h@sha256:b as " + image}},
	} {
		f := newFleet(t)
		var asked []string
		ws := f.openWith(t, func(_ string, e *fakeEngine) engine.Engine { return imageEngine{fakeEngine: e, asked: &asked} })
		if err := ws.Tokens.Put("gamma", "t0ken"); err != nil {
			t.Fatal(err)
		}
		p := &reconcile.Plan{Image: image, Images: []reconcile.ImageTransfer{c.transfer},
			Boxes: []reconcile.BoxPlan{{Name: "gamma", Host: "nexus", Action: reconcile.Start}}}
		if err := ws.Apply(t.Context(), p, workspace.ApplyOptions{Parallelism: 1}); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(asked, c.want) {
			t.Errorf("asked %q, want %q", asked, c.want)
		}
	}
}
