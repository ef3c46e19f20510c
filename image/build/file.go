package build

import (
	"context"
	"fmt"

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
	if p.Warning != "" && o.Line != nil {
		o.Line("warning: " + p.Warning)
	}
	e, err := docker.Connect(ctx, spec.Host{}, docker.Options{})
	if err != nil {
		return Result{}, err
	}
	defer e.Close()
	rep, err := Run(ctx, e, lock, p, o)
	if err != nil {
		return rep, err
	}
	if rep.Built && !o.NoLock {
		// Written before the push, so that a failed push leaves the build
		// recorded and the next build --push only pushes.
		if err := spec.WriteLock(lockPath, lock); err != nil {
			return rep, err
		}
		rep.Lock = display
	}
	if o.Push == "" {
		return rep, nil
	}
	if rep.Pushed, err = Push(ctx, e, rep.Image, o.Push, tagOf(p.Tag)); err != nil {
		if rep.Lock != "" {
			return rep, fmt.Errorf("%s records the new image %s, without a registry reference yet: %w", display, rep.Image, err)
		}
		return rep, err
	}
	if o.NoLock {
		return rep, nil
	}
	lock.Image.Ref = rep.Pushed
	if err := spec.WriteLock(lockPath, lock); err != nil {
		return rep, err
	}
	rep.Lock = display
	return rep, nil
}

// ErrNoImage is a reference to pin that the engine does not have.
var ErrNoImage = hint.New("the engine has no such image", "docker image ls shows what the engine has")

// PinLock records in the boxes.lock at lockPath (shown as display; a
// missing one is made) an image the local engine has (see Pin). With push
// (a repository, see Push), it pushes the image there first and records
// the pushed reference pinned by digest; a failed push writes nothing.
// pinned is the lock's image section as written.
func PinLock(ctx context.Context, lockPath, display, ref, push string) (pinned *spec.Image, toolsErr error, err error) {
	if push != "" {
		if _, err := pushTarget(push); err != nil {
			return nil, nil, err
		}
	}
	lock, err := spec.ReadLock(lockPath, display)
	if err != nil {
		return nil, nil, err
	}
	if lock == nil {
		lock = &spec.Lock{Version: 1}
	}
	e, err := docker.Connect(ctx, spec.Host{}, docker.Options{})
	if err != nil {
		return nil, nil, err
	}
	defer e.Close()
	id, toolsErr, err := Pin(ctx, e, lock, ref)
	if err != nil {
		return nil, nil, &kindError{ErrNoImage, err}
	}
	if push != "" {
		if lock.Image.Ref, err = Push(ctx, e, id, push, tagOf(ref)); err != nil {
			return nil, nil, err
		}
	}
	return lock.Image, toolsErr, spec.WriteLock(lockPath, lock)
}
