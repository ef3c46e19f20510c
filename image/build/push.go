package build

import (
	"context"
	"fmt"
	"strings"

	"github.com/distribution/reference"

	"github.com/hermes-box/boxes/internal/hint"
)

// pushHint is what --push takes.
const pushHint = "--push takes a repository, NAME or NAME:TAG, such as registry.example.com/team/hermes-box"

// pushTarget checks --push's repo before anything is built: a repository
// with an optional tag, never a digest (the push makes that).
func pushTarget(repo string) (reference.Named, error) {
	named, err := reference.ParseNormalizedNamed(repo)
	if err != nil {
		return nil, hint.Wrap(fmt.Errorf("--push %s: %w", repo, err), pushHint)
	}
	if _, ok := named.(reference.Digested); ok {
		return nil, hint.Wrap(fmt.Errorf("--push %s: the push makes the digest, so a repository takes none", repo), pushHint)
	}
	return named, nil
}

// tagOf is ref's tag, "latest" when it has none (or is an image ID).
func tagOf(ref string) string {
	if strings.HasPrefix(ref, "sha256:") {
		return "latest"
	}
	if named, err := reference.ParseNormalizedNamed(ref); err == nil {
		if t, ok := named.(reference.NamedTagged); ok {
			return t.Tag()
		}
	}
	return "latest"
}

// Push tags image as repo (NAME or NAME:TAG; without a tag, as tag) and
// pushes it with the credentials of this machine's docker configuration.
// It returns the reference pinned by digest that hosts lacking the image
// pull, NAME@sha256:…, once the engine confirms that it names image.
func Push(ctx context.Context, e Engine, image, repo, tag string) (string, error) {
	named, err := pushTarget(repo)
	if err != nil {
		return "", err
	}
	tagged, ok := named.(reference.NamedTagged)
	if !ok {
		if tagged, err = reference.WithTag(named, tag); err != nil {
			return "", hint.Wrap(fmt.Errorf("--push %s: tag %s: %w", repo, tag, err), pushHint)
		}
	}
	ref := reference.FamiliarString(tagged)
	if err := e.Tag(ctx, image, ref); err != nil {
		return "", fmt.Errorf("tagging %s as %s: %w", image, ref, err)
	}
	digest, err := e.PushImage(ctx, ref)
	if err != nil {
		return "", err
	}
	pinned := reference.FamiliarName(named) + "@" + digest
	// The engine records what it pushed under the digest: a check that
	// the reference the lock gets names this very image.
	if id, err := e.ImageID(ctx, pinned); err != nil || id != image {
		return "", fmt.Errorf("pushed %s, but the engine does not know %s as %s (%s, %v)", ref, pinned, image, id, err)
	}
	return pinned, nil
}
