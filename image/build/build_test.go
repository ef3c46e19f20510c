package build

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/image"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/spec"
)

type fakeEngine struct {
	images map[string]string // ref → ID
	builds int
	tagged string
}

func (f *fakeEngine) ImageID(_ context.Context, ref string) (string, error) {
	if id, ok := f.images[ref]; ok {
		return id, nil
	}
	return "", errors.New("no such image " + ref)
}
func (f *fakeEngine) Tag(_ context.Context, image, ref string) error { f.tagged = ref; return nil }
func (f *fakeEngine) Build(_ context.Context, o docker.BuildOptions) (docker.BuildResult, error) {
	f.builds++
	return docker.BuildResult{ID: "sha256:new", Steps: 9, Cached: 8}, nil
}
func (f *fakeEngine) ToolVersions(context.Context, string) (map[string]string, error) {
	return map[string]string{"node": "22"}, nil
}

func TestBuildRecordsTheImageAndSkipsACurrentOne(t *testing.T) {
	o := Options{Recipe: image.Recipe, Offline: true, Base: "base:local"}
	lock := &spec.Lock{Version: 1}
	p, err := Prepare(lock, o)
	if err != nil {
		t.Fatal(err)
	}
	e := &fakeEngine{images: map[string]string{"base:local": "sha256:base"}}
	res, err := Run(context.Background(), e, lock, p, o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Built || e.builds != 1 || lock.Image == nil || lock.Image.ID != "sha256:new" || lock.Image.Inputs != p.Inputs || lock.Image.Tools["node"] != "22" {
		t.Fatalf("result %+v, lock image %+v", res, lock.Image)
	}
	// Same inputs, and the engine has the image: nothing is built.
	e.images["sha256:new"] = "sha256:new"
	res, err = Run(context.Background(), e, lock, p, o)
	if err != nil || res.Built || e.builds != 1 || e.tagged != p.Tag {
		t.Errorf("a current image: %+v, %v, %d builds", res, err, e.builds)
	}
	o.Force = true
	if res, _ := Run(context.Background(), e, lock, p, o); !res.Built || e.builds != 2 {
		t.Error("--force did not build")
	}
}

func TestBuildRefusals(t *testing.T) {
	if _, err := Prepare(&spec.Lock{}, Options{Recipe: image.Recipe}); !errors.Is(err, ErrPins) || !slices.Equal(hint.Lines(err), []string{pinsHint(false)}) {
		t.Errorf("a lock without pins: %v %q", err, hint.Lines(err))
	}
	if _, err := Prepare(&spec.Lock{}, Options{Recipe: image.Recipe, Offline: true}); !errors.Is(err, ErrPins) || !slices.Equal(hint.Lines(err), []string{pinsHint(true)}) {
		t.Errorf("an offline build without a base: %v %q", err, hint.Lines(err))
	}
	o := Options{Recipe: image.Recipe, Offline: true, Base: "base:missing"}
	p, err := Prepare(&spec.Lock{}, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), &fakeEngine{}, &spec.Lock{}, p, o); !errors.Is(err, ErrNoBase) {
		t.Errorf("offline without the base: %v", err)
	}
}
