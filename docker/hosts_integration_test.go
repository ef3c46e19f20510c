package docker

import (
	"context"
	"testing"
	"time"

	"github.com/hermes-box/boxes/internal/testhost"
	"github.com/hermes-box/boxes/spec"
)

// TestIntegrationStreamImage: an engine that lacks the test image gets it
// from the local engine through the API, with the same image ID.
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
	n, err := far.StreamImage(ctx, local, ref)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("streamed %d MiB in %s", n>>20, time.Since(began).Round(time.Millisecond))
	if n == 0 {
		t.Error("streamed nothing")
	}
}
