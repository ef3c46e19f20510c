package apply_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/hermes-box/boxes/apply"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/statedir"
)

// fakeCarrier journals transfers under the box "image"; it fails for the
// hosts in fail.
type fakeCarrier struct {
	j    *journal
	fail map[string]bool
	mu   sync.Mutex
	n    int
}

func (c *fakeCarrier) StreamImage(_ context.Context, from, to, image string) error {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	c.j.add("image", "stream from "+hostName(from)+" to "+hostName(to))
	if c.fail[to] {
		return errors.New("connection reset")
	}
	return nil
}

func (c *fakeCarrier) PullImage(_ context.Context, to, ref, image string) error {
	c.j.add("image", "pull "+ref+" on "+hostName(to))
	return nil
}

func streamApplier(t *testing.T, c *fakeCarrier) (*apply.Applier, *reconcile.Plan, *journal) {
	t.Helper()
	j := &journal{}
	c.j = j
	alpha, beta, gamma, delta := testBox("alpha"), testBox("beta"), testBox("gamma"), testBox("delta")
	beta.Host, gamma.Host, delta.Host = "far", "far", "near"
	cfg := testCfg(alpha, beta, gamma, delta)
	cfg.Path = filepath.Join(t.TempDir(), "boxes.yaml")
	tokens := statedir.Beside(cfg.Path).Tokens()
	for _, b := range cfg.Boxes {
		if err := tokens.Put(b.Name, testToken); err != nil {
			t.Fatal(err)
		}
	}
	local := ""
	p := &reconcile.Plan{Image: testImage, Images: []reconcile.ImageTransfer{
		{Image: testImage, To: "far", From: &local, Bytes: 1},
		{Image: testImage, To: "near", From: &local, Bytes: 1},
	}}
	for _, b := range cfg.Boxes {
		p.Boxes = append(p.Boxes, reconcile.BoxPlan{Name: b.Name, Host: b.Host, Action: reconcile.Create, State: spec.Running, Reasons: []reconcile.Reason{{Kind: "new"}}})
	}
	a := &apply.Applier{Config: cfg, Tokens: tokens, Parallelism: 4, Progress: quietProgress{j}, Images: c,
		Engines: map[string]engine.Lifecycle{"": hostEngine{"", j}, "far": hostEngine{"far", j}, "near": hostEngine{"near", j}}}
	return a, p, j
}

func TestApplyStreamsImageFirst(t *testing.T) {
	c := &fakeCarrier{}
	a, p, j := streamApplier(t, c)
	if err := a.Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if c.n != 2 {
		t.Errorf("%d streams, want one per host", c.n)
	}
	for _, box := range []string{"beta", "gamma"} {
		if s, c := j.at("image", "stream from local to far"), j.at(box, "far: create force=false"); s < 0 || c < s {
			t.Errorf("%s created at %d, the image streamed at %d", box, c, s)
		}
	}
	if s, c := j.at("image", "stream from local to near"), j.at("delta", "near: create force=false"); s < 0 || c < s {
		t.Errorf("delta created at %d, the image streamed at %d", c, s)
	}
	want := []string{"local: create force=false", "local: start", "local: ready", "local: init", "done"}
	if got := j.of("alpha"); !reflect.DeepEqual(got, want) {
		t.Errorf("alpha: %q", got)
	}
}

func TestApplyStreamFailureFailsOnlyThatHost(t *testing.T) {
	c := &fakeCarrier{fail: map[string]bool{"far": true}}
	a, p, j := streamApplier(t, c)
	err := a.Apply(context.Background(), p)
	var failed []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var be *apply.BoxError
		if !errors.As(e, &be) || !strings.Contains(e.Error(), "bringing image 111111111111 to host far: connection reset") {
			t.Errorf("error: %v", e)
			continue
		}
		failed = append(failed, be.Box)
	}
	if !reflect.DeepEqual(failed, []string{"beta", "gamma"}) {
		t.Errorf("failed: %v", failed)
	}
	for _, box := range []string{"beta", "gamma"} {
		if got := j.of(box); len(got) != 1 {
			t.Errorf("%s did %q after the stream failed", box, got)
		}
	}
	for _, box := range []string{"alpha", "delta"} {
		if got := j.of(box); len(got) == 0 || got[len(got)-1] != "done" {
			t.Errorf("%s: %q", box, got)
		}
	}

	// Without a way to bring images, the boxes that need one fail, naming it.
	a, p, _ = streamApplier(t, &fakeCarrier{})
	a.Images = nil
	if err := a.Apply(context.Background(), p); err == nil || !strings.Contains(err.Error(), "nothing here can bring images") {
		t.Errorf("no carrier: %v", err)
	}
}
