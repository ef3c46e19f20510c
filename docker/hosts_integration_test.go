package docker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hermes-box/boxes/internal/testhost"
	"github.com/hermes-box/boxes/spec"
)

// TestIntegrationStreamImage: an engine that lacks the test image gets it
// from the local engine through the API, with the same image ID. Real
// engine: the stream is the local engine's own image save, loaded by a
// second dockerd started for the test; the fake streams no image at all.
func TestIntegrationStreamImage(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	const ref = "hermes-box-lite:test"
	ctx := context.Background()
	local, err := Connect(ctx, spec.Host{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	if _, err := local.ImageID(ctx, ref); err != nil {
		t.Fatalf("test image missing (make test-image): %v", err)
	}
	remote := testhost.Start(t, testhost.Options{})
	far, err := Connect(ctx, spec.Host{Name: "far", Docker: remote.Socket}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer far.Close()
	if _, err := far.ImageID(ctx, ref); err == nil {
		t.Fatal("the new engine already has the image")
	}
	began := time.Now()
	id, r, err := local.SaveImage(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n, err := far.LoadImage(ctx, ref, id, r)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("streamed %d MiB in %s", n>>20, time.Since(began).Round(time.Millisecond))
	if n == 0 {
		t.Error("streamed nothing")
	}
}

// TestIntegrationPullImageFails: a pull by digest from a registry the
// engine cannot reach fails, naming the reference and the host, and
// leaves no image behind. Real engine: the failure is the engine's pull
// from an address where nothing listens; the fake pulls nothing.
func TestIntegrationPullImageFails(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	ctx := context.Background()
	local, err := Connect(ctx, spec.Host{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	ref := "127.0.0.1:1/hermes-box-lite@sha256:" + strings.Repeat("0", 64)
	err = local.PullImage(ctx, ref, "sha256:"+strings.Repeat("1", 64))
	if err == nil || !strings.Contains(err.Error(), "pulling "+ref+" on the local host") {
		t.Fatalf("pull from nowhere: %v", err)
	}
	t.Logf("pull from nowhere: %v", err)
	if _, err := local.ImageID(ctx, ref); err == nil {
		t.Error("a failed pull left an image")
	}
}
