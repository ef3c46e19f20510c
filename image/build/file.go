package build

import (
	"context"

	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/image"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/spec"
)

// BuildLock builds the image of the boxes.lock at lockPath (shown as
// display; a missing lock builds from no pins) on the local engine, from
// the recipe in recipeDir ("" for the built-in one), and writes the lock's
// image section unless o.NoLock or the image was current.
func BuildLock(ctx context.Context, lockPath, display, recipeDir string, o Options) (Result, error) {
	lock, err := spec.ReadLock(lockPath, display)
	if err != nil {
		return Result{}, err
	}
	if lock == nil {
		lock = &spec.Lock{Version: 1, Path: lockPath}
	}
	if o.Recipe, err = image.RecipeDir(recipeDir); err != nil {
		return Result{}, err
	}
	p, err := Prepare(lock, o)
	if err != nil {
		return Result{}, err
	}
	e, err := docker.Connect(ctx, spec.Host{}, docker.Options{})
	if err != nil {
		return Result{}, err
	}
	defer e.Close()
	rep, err := Run(ctx, e, lock, p, o)
	if err != nil || !rep.Built || o.NoLock {
		return rep, err
	}
	if err := spec.WriteLock(lockPath, lock); err != nil {
		return rep, err
	}
	rep.Lock = display
	return rep, nil
}

// ErrNoImage is a reference to pin that the engine does not have.
var ErrNoImage = hint.New("the engine has no such image", "docker image ls shows what the engine has")

// PinLock records in the boxes.lock at lockPath (shown as display; a
// missing one is made) an image the local engine has (see Pin).
func PinLock(ctx context.Context, lockPath, display, ref string) (id string, toolsErr error, err error) {
	lock, err := spec.ReadLock(lockPath, display)
	if err != nil {
		return "", nil, err
	}
	if lock == nil {
		lock = &spec.Lock{Version: 1}
	}
	e, err := docker.Connect(ctx, spec.Host{}, docker.Options{})
	if err != nil {
		return "", nil, err
	}
	defer e.Close()
	if id, toolsErr, err = Pin(ctx, e, lock, ref); err != nil {
		return "", nil, &kindError{ErrNoImage, err}
	}
	return id, toolsErr, spec.WriteLock(lockPath, lock)
}
