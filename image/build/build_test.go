package build

import (
	"context"
	"errors"
	"slices"
	"strings"
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
	pushed []string
	// pushErr fails every push; lost pushes without the engine recording
	// the digest against the image.
	pushErr error
	lost    bool
}

func (f *fakeEngine) ImageID(_ context.Context, ref string) (string, error) {
	if id, ok := f.images[ref]; ok {
		return id, nil
	}
	return "", errors.New("no such image " + ref)
}
func (f *fakeEngine) Tag(_ context.Context, image, ref string) error {
	f.tagged = ref
	if f.images == nil {
		f.images = map[string]string{}
	}
	f.images[ref] = image
	return nil
}

const pushedDigest = "sha256:dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"

func (f *fakeEngine) PushImage(_ context.Context, ref string) (string, error) {
	if f.pushErr != nil {
		return "", f.pushErr
	}
	f.pushed = append(f.pushed, ref)
	if !f.lost {
		// ref is always NAME:TAG here.
		name := ref[:strings.LastIndex(ref, ":")]
		f.images[name+"@"+pushedDigest] = f.images[ref]
	}
	return pushedDigest, nil
}
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

// TestPush: --push tags the image as the repository (its tag, else the
// image's), pushes it and returns NAME@DIGEST once the engine knows that
// reference as the image; a digest or a malformed repository is refused
// before anything is pushed.
func TestPush(t *testing.T) {
	ctx := context.Background()
	cases := []struct{ repo, tag, pushed, pinned string }{
		{"127.0.0.1:5000/hbl", "abc123", "127.0.0.1:5000/hbl:abc123", "127.0.0.1:5000/hbl@" + pushedDigest},
		{"registry.example.com/team/hbl:v1", "abc123", "registry.example.com/team/hbl:v1", "registry.example.com/team/hbl@" + pushedDigest},
		{"docker.io/hermes/box", "latest", "hermes/box:latest", "hermes/box@" + pushedDigest},
	}
	for _, c := range cases {
		e := &fakeEngine{images: map[string]string{}}
		pinned, err := Push(ctx, e, "sha256:img", c.repo, c.tag)
		if err != nil || pinned != c.pinned || !slices.Equal(e.pushed, []string{c.pushed}) || e.images[c.pushed] != "sha256:img" {
			t.Errorf("%s: %q %v, pushed %q", c.repo, pinned, err, e.pushed)
		}
	}
	for _, repo := range []string{"127.0.0.1:5000/hbl@" + pushedDigest, "Not A Repo"} {
		e := &fakeEngine{images: map[string]string{}}
		_, err := Push(ctx, e, "sha256:img", repo, "x")
		if err == nil || len(e.pushed) != 0 || !slices.Equal(hint.Lines(err), []string{pushHint}) {
			t.Errorf("%s: %v (hints %q), pushed %q", repo, err, hint.Lines(err), e.pushed)
		}
	}
	e := &fakeEngine{images: map[string]string{}, lost: true}
	if _, err := Push(ctx, e, "sha256:img", "127.0.0.1:5000/hbl", "x"); err == nil {
		t.Error("a push whose digest the engine does not know as the image was taken")
	}
	if _, err := Prepare(&spec.Lock{}, Options{Recipe: image.Recipe, Offline: true, Base: "b", Push: "a/b@" + pushedDigest}); err == nil {
		t.Error("build --push with a digest was not refused before the build")
	}
	if tagOf("hermes-box-lite:0123456789ab") != "0123456789ab" || tagOf("sha256:"+strings.Repeat("0", 64)) != "latest" {
		t.Error("tagOf")
	}
}
