package reconcile_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
)

// farInput declares box alpha on the local engine and beta on host far;
// the local engine has the image (363 MiB), far has it when farHas.
func farInput(farHas bool) reconcile.Input {
	local := emptyObserved()
	local.ImageSizes = map[string]int64{testImage: 363 << 20}
	far := &engine.Observed{Host: "far", Images: map[string]bool{testImage: farHas}}
	alpha, beta := testBox("alpha"), testBox("beta")
	beta.Host = "far"
	return reconcile.Input{Config: testCfg(alpha, beta), Image: testImage,
		Observed: map[string]*engine.Observed{"": local, "far": far}}
}

func TestPlanStreamsImageToHostThatLacksIt(t *testing.T) {
	p, err := reconcile.NewPlan(farInput(false))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Images) != 1 {
		t.Fatalf("image transfers: %+v", p.Images)
	}
	if tr := p.Images[0]; tr.To != "far" || tr.From == nil || *tr.From != "" || tr.Pull != "" || tr.Bytes != 363<<20 || tr.Image != testImage {
		t.Errorf("transfer: %+v", tr)
	}
	var text bytes.Buffer
	p.RenderText(&text, false)
	for _, want := range []string{
		"  # image 111111111111 streamed from local to far (363.0 MiB), its ID checked after the load\n",
		"Plan: 2 to create, 0 to recreate, 0 to start, 0 to stop, 0 to delete, 1 image to stream.",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if i, j := strings.Index(text.String(), "# image"), strings.Index(text.String(), "# alpha"); i < 0 || i > j {
		t.Errorf("the stream is not shown before the boxes:\n%s", text.String())
	}
	j := p.JSON()
	if len(j.Images) != 1 || j.Images[0].Bytes != 363<<20 || j.Summary.Stream != 1 {
		t.Errorf("json: %+v %+v", j.Images, j.Summary)
	}
	if got := p.Summary().Done(); !strings.HasSuffix(got, ", 1 image streamed") {
		t.Errorf("done: %s", got)
	}

	// A saved plan's fingerprint covers the transfer.
	edited := *p
	edited.Images = nil
	if reconcile.Fingerprint(nil, testFleet, nil, p) == reconcile.Fingerprint(nil, testFleet, nil, &edited) {
		t.Error("the fingerprint does not cover the image transfers")
	}

	// Nothing to bring where the image is.
	p, err = reconcile.NewPlan(farInput(true))
	if err != nil || len(p.Images) != 0 || p.JSON().Images == nil {
		t.Errorf("far has the image: %+v %v", p, err)
	}
}

func TestPlanImageNowhere(t *testing.T) {
	in := farInput(false)
	in.Observed[""].Images[testImage] = false
	_, err := reconcile.NewPlan(in)
	if !errors.Is(err, reconcile.ErrImageMissing) || !strings.Contains(err.Error(), "the local engine lacks 111111111111") {
		t.Errorf("err = %v", err)
	}
	in.Config.Boxes = in.Config.Boxes[1:] // only beta, on far
	_, err = reconcile.NewPlan(in)
	if !errors.Is(err, reconcile.ErrImageMissing) || !strings.Contains(err.Error(), "host far lacks 111111111111, and no host has it to stream from") {
		t.Errorf("err = %v", err)
	}
}

// A registry reference pinned by digest in boxes.lock is pulled instead,
// even where no engine has the image.
func TestPlanPullsDigestRef(t *testing.T) {
	ref := "registry.example/hermes@sha256:" + strings.Repeat("ab", 32)
	if !reconcile.PinnedByDigest(ref) || reconcile.PinnedByDigest("registry.example/hermes:1.0") || reconcile.PinnedByDigest("hermes@sha256:abc") {
		t.Fatal("PinnedByDigest")
	}
	in := farInput(false)
	in.ImageRef = ref
	in.Observed[""].Images[testImage] = false
	p, err := reconcile.NewPlan(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Images) != 2 || p.Images[0].To != "" || p.Images[1].To != "far" || p.Images[1].From != nil || p.Images[1].Pull != ref || p.Images[1].Bytes != -1 {
		t.Fatalf("transfers: %+v", p.Images)
	}
	var text bytes.Buffer
	p.RenderText(&text, false)
	for _, want := range []string{"# image 111111111111 pulled on far from " + ref + ", its ID checked after the pull", "0 to delete, 2 images to pull."} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
}

// A host gets the image once, whether boxes are created there or moved there.
func TestPlanOneStreamForMoveAndCreate(t *testing.T) {
	in, moved := moveInput(t, false, "running")
	fresh := testBox("beta")
	fresh.Host = "far"
	in.Config = testCfg(moved, fresh)
	p, err := reconcile.NewPlan(in)
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Summary(); s.Move != 1 || s.Create != 1 || s.Stream != 1 {
		t.Errorf("summary: %+v", s)
	}
	if len(p.Images) != 1 || p.Images[0].To != "far" {
		t.Errorf("transfers: %+v", p.Images)
	}
}

// A host with nothing to create, recreate or start needs no image.
func TestPlanNoStreamForUnchangedHost(t *testing.T) {
	in := farInput(false)
	beta := in.Config.Boxes[1]
	beta.State = spec.Stopped
	in.Config.Boxes[1] = beta
	observeBox(t, in.Observed["far"], beta, testImage, "exited", 0)
	in.Tokens = map[string]string{"beta": testToken}
	p, err := reconcile.NewPlan(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Images) != 0 {
		t.Errorf("transfers: %+v", p.Images)
	}
}

// A Kubernetes cluster's nodes pull from a registry: an image boxes.lock
// has no registry reference of is refused for a kubernetes: host, though a
// Docker host has it to stream from; with a reference, it is pulled.
func TestPlanKubernetesHostPullsOnly(t *testing.T) {
	in := farInput(false)
	in.Config.Hosts = map[string]spec.Host{"far": {Name: "far", Kubernetes: &spec.Kubernetes{Context: "c", Namespace: "boxes"}}}
	_, err := reconcile.NewPlan(in)
	if !errors.Is(err, reconcile.ErrImageMissing) || !strings.Contains(err.Error(), "host far is a Kubernetes cluster, whose nodes pull images from a registry") {
		t.Fatalf("err = %v", err)
	}
	in.ImageRef = "registry.example/hermes@sha256:" + strings.Repeat("ab", 32)
	p, err := reconcile.NewPlan(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Images) != 1 || p.Images[0].Pull != in.ImageRef || p.Images[0].From != nil || !p.Images[0].Nodes {
		t.Errorf("transfers %+v, want far's nodes to pull the reference", p.Images)
	}
	if got, want := p.Images[0].String(), "image 111111111111 pulled by the nodes of host far from "+in.ImageRef+" (363.0 MiB), by its digest"; got != want {
		t.Errorf("shown as %q, want %q", got, want)
	}
}
