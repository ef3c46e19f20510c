// Package build builds the box image from a recipe (package image's, or a
// directory like it) and the pins of boxes.lock, and records the result in
// the lock: what boxes build and boxes lock image do, over a narrow engine
// interface.
package build

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/image"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/spec"
)

// Engine is what a build needs of the engine.
type Engine interface {
	ImageID(ctx context.Context, ref string) (string, error)
	Tag(ctx context.Context, image, ref string) error
	Build(ctx context.Context, opts docker.BuildOptions) (docker.BuildResult, error)
	ToolVersions(ctx context.Context, image string) (map[string]string, error)
	// PushImage pushes ref, a tag the engine has, and returns the digest
	// the registry stored it under.
	PushImage(ctx context.Context, ref string) (string, error)
}

// Sentinels callers branch on.
var (
	// ErrPins is a lock that lacks pins the build needs; its hint depends
	// on whether the build is offline (see pinsHint).
	ErrPins = errors.New("boxes.lock lacks pins the build needs")
	// ErrNoBase is an offline build whose base the engine lacks.
	ErrNoBase = hint.New("the engine lacks the base image", "an offline build needs a base the engine has; make test-image makes hermes-box-lite-base:bookworm")
	// ErrBuild is a build that failed in one of its steps.
	ErrBuild = hint.New("the build failed", "the lines above show the failing step; provision.sh names what it was doing")
)

// Options are build's flags.
type Options struct {
	// Recipe is the recipe to build from (image.Recipe, or image.RecipeDir's view).
	Recipe fs.FS
	Tag    string
	Base   string
	// Offline switches off every network install; Force builds even when
	// the lock's image is current; NoLock leaves the lock as it is.
	Offline, Force, NoLock bool
	// Push is a repository (NAME or NAME:TAG) to push the image to once it
	// is built; the lock's image ref becomes NAME@DIGEST (see Push).
	Push string
	// Line receives the builder's output.
	Line func(string)
	// Gate is the program put into the image as its gate (image.GateFile);
	// "" is the running boxes binary.
	Gate string
}

// Result is a build's outcome, and build --json's form.
type Result struct {
	Image   string            `json:"image"`
	Ref     string            `json:"ref"`
	Inputs  string            `json:"inputs"`
	Built   bool              `json:"built"` // false: the lock's image was current
	Seconds float64           `json:"seconds"`
	Steps   int               `json:"steps"`
	Cached  int               `json:"cached_steps"`
	Tools   map[string]string `json:"tools,omitempty"`
	Lock    string            `json:"lock,omitempty"` // the lock written, if any
	// Pushed is the reference pinned by digest the image was pushed as (--push).
	Pushed string `json:"pushed,omitempty"`
}

// Plan is a build about to run: its build arguments, inputs digest and tag.
type Plan struct {
	// Warning is what the build should tell its user first ("" none).
	Warning string
	Context *docker.BuildContext
	Args    map[string]string
	Inputs  string
	Tag     string
}

// Prepare works out what a build of lock's pins with o would be, offline.
func Prepare(lock *spec.Lock, o Options) (Plan, error) {
	bc, err := docker.NewBuildContext(o.Recipe)
	if err != nil {
		return Plan{}, err
	}
	warning, err := addGate(bc, o.Gate)
	if err != nil {
		return Plan{}, err
	}
	if _, err := fs.Stat(o.Recipe, image.Dockerfile); err != nil {
		return Plan{}, hint.Wrap(fmt.Errorf("the recipe has no %s", image.Dockerfile), "in a source tree the recipe is the image/ folder: --recipe PATH/image")
	}
	args, err := image.BuildArgs(lock.Pins, o.Base, o.Offline)
	if err != nil {
		return Plan{}, hint.Wrap(&kindError{ErrPins, err}, "%s", pinsHint(o.Offline))
	}
	if o.Push != "" {
		if _, err := pushTarget(o.Push); err != nil {
			return Plan{}, err
		}
	}
	p := Plan{Context: bc, Args: args, Inputs: docker.InputsDigest(bc, args), Tag: o.Tag, Warning: warning}
	if p.Tag == "" {
		p.Tag = compose.ManagedLabel + ":" + strings.TrimPrefix(p.Inputs, "sha256:")[:12]
	}
	return p, nil
}

// addGate puts the gate's program into the context: path, or the running
// boxes binary. Not a Linux program is an error; a dynamically linked one
// gives a warning: it runs in the image only if the image's C library suits
// it.
func addGate(bc *docker.BuildContext, path string) (warning string, err error) {
	if path == "" {
		self, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("finding this boxes binary, the box's gate: %w", err)
		}
		path = self
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the box's gate: %w", err)
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return "", hint.Wrap(fmt.Errorf("%s cannot be the box's gate: it is not a Linux program", path),
			"boxes puts itself into the image as the box's network gate: run a Linux build of boxes")
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			warning = fmt.Sprintf("%s is dynamically linked: the box's gate runs it in the image, which works only with a C library that suits it; build boxes with CGO_ENABLED=0 (make build does)", path)
		}
	}
	bc.Add(image.GateFile, data)
	return warning, nil
}

// pinsHint is what to do about ErrPins: an offline build needs no tool
// pins, only a base.
func pinsHint(offline bool) string {
	if offline {
		return "an offline build needs --base IMAGE, a local image with bash (make test-image makes one)"
	}
	return "boxes lock update fills the tool pins; boxes lock update base pins the base image"
}

// Run builds p unless lock's image is current (same inputs, and the engine
// has it), reads the tool versions from the image, and records it in lock
// (written by the caller) unless o.NoLock.
func Run(ctx context.Context, e Engine, lock *spec.Lock, p Plan, o Options) (Result, error) {
	if o.Offline {
		// Offline, nothing can be pulled: a missing base is the user's to make.
		if _, err := e.ImageID(ctx, p.Args["BASE_IMAGE"]); err != nil {
			return Result{}, &kindError{ErrNoBase, fmt.Errorf("--offline: %w", err)}
		}
	}
	started := time.Now()
	res := Result{Ref: p.Tag, Inputs: p.Inputs}
	if img := lock.Image; img != nil && img.Inputs == p.Inputs && !o.Force && !o.NoLock {
		if id, err := e.ImageID(ctx, img.ID); err == nil {
			if err := e.Tag(ctx, id, p.Tag); err != nil {
				return Result{}, err
			}
			res.Image, res.Tools = id, img.Tools
			return res, nil
		}
	}
	built, err := e.Build(ctx, docker.BuildOptions{Context: p.Context, Dockerfile: image.Dockerfile, Tag: p.Tag, Args: p.Args, Line: o.Line})
	if err != nil {
		return Result{}, &kindError{ErrBuild, err}
	}
	res.Image, res.Built, res.Steps, res.Cached = built.ID, true, built.Steps, built.Cached
	res.Seconds = time.Since(started).Seconds()
	if res.Tools, err = e.ToolVersions(ctx, built.ID); err != nil {
		return Result{}, fmt.Errorf("built %s but cannot read its tool versions, so boxes.lock is unchanged: %w", built.ID, err)
	}
	if !o.NoLock {
		lock.Image = &spec.Image{ID: built.ID, Ref: p.Tag, Inputs: p.Inputs, Built: time.Now().UTC().Truncate(time.Second), Tools: res.Tools}
	}
	return res, nil
}

// CurrentInputs is the inputs digest a full build of the built-in recipe
// with lock's pins would have; false when the pins are not complete.
func CurrentInputs(lock *spec.Lock) (string, bool) {
	p, err := Prepare(lock, Options{Recipe: image.Recipe})
	if err != nil {
		return "", false
	}
	return p.Inputs, true
}

// kindError is err, known to callers as one of the sentinels above.
type kindError struct{ kind, err error }

func (e *kindError) Error() string        { return e.err.Error() }
func (e *kindError) Unwrap() error        { return e.err }
func (e *kindError) Is(target error) bool { return target == e.kind }

// Hint is the sentinel's hint, if it has one.
func (e *kindError) Hint() string {
	if h, ok := e.kind.(interface{ Hint() string }); ok {
		return h.Hint()
	}
	return ""
}

// Pin records in lock an image the engine already has (boxes lock image
// REF). Tool versions that cannot be read are left out, with toolsErr saying why.
func Pin(ctx context.Context, e Engine, lock *spec.Lock, ref string) (id string, toolsErr error, err error) {
	if id, err = e.ImageID(ctx, ref); err != nil {
		return "", nil, err
	}
	tools, toolsErr := e.ToolVersions(ctx, id)
	lock.Image = &spec.Image{ID: id, Ref: ref, Built: time.Now().UTC().Truncate(time.Second), Tools: tools}
	return id, toolsErr, nil
}
