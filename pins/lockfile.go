package pins

import (
	"context"
	"os"
	"slices"
	"strings"

	"github.com/hermes-box/boxes/spec"
)

// The environment variables that point a Resolver made by FromEnv at other
// registries.
const (
	EnvNPM       = "BOXES_NPM_REGISTRY"
	EnvNode      = "BOXES_NODE_DIST"
	EnvGitHubAPI = "BOXES_GITHUB_API"
	EnvGitHub    = "BOXES_GITHUB_DOWNLOADS"
)

// FromEnv asks the public registries, or the mirrors the environment names
// (npm's own npm_config_registry too).
func FromEnv(userAgent string) *Resolver {
	npm := os.Getenv(EnvNPM)
	if npm == "" {
		npm = os.Getenv("npm_config_registry")
	}
	return &Resolver{
		NPM:       npm,
		Node:      os.Getenv(EnvNode),
		GitHubAPI: os.Getenv(EnvGitHubAPI),
		GitHub:    os.Getenv(EnvGitHub),
		UserAgent: userAgent,
	}
}

// LockUpdate says what UpdateLock did.
type LockUpdate struct {
	Changes []Change
	// Complete: only the missing pins were asked for, and the lock has them all.
	Complete bool
	Changed  bool // some pin differs from the lock's
	Written  bool
}

// UpdateOptions are lock update's choices.
type UpdateOptions struct {
	Missing bool // resolve only the named pins the lock lacks
	DryRun  bool // write nothing
}

// UpdateLock resolves the pins args names (every pin when none; an
// UnknownPinError for a name that is none) of the boxes.lock at path,
// shown as display, and writes the lock when a pin changed. Either every
// named pin resolves and the lock is written, or nothing is.
func (r *Resolver) UpdateLock(ctx context.Context, path, display string, args []string, o UpdateOptions, base BaseDigest) (LockUpdate, error) {
	names, err := Select(args)
	if err != nil {
		return LockUpdate{}, err
	}
	lock, err := spec.ReadLock(path, display)
	if err != nil {
		return LockUpdate{}, err
	}
	if lock == nil {
		lock = &spec.Lock{Version: 1}
	}
	if o.Missing {
		names = slices.DeleteFunc(names, func(n string) bool { return Has(lock.Pins, n) })
		if len(names) == 0 {
			return LockUpdate{Complete: true}, nil
		}
	}
	updated, changes, err := r.Update(ctx, lock.Pins, names, base)
	if err != nil {
		return LockUpdate{}, &ResolveError{Err: err}
	}
	u := LockUpdate{Changes: changes, Changed: slices.ContainsFunc(changes, func(c Change) bool { return c.Changed })}
	if u.Changed && !o.DryRun {
		lock.Pins = updated
		if err := spec.WriteLock(path, lock); err != nil {
			return u, err
		}
		u.Written = true
	}
	return u, nil
}

// ResolveError is a pin that did not resolve (the network, a registry):
// nothing was written.
type ResolveError struct{ Err error }

func (e *ResolveError) Error() string { return e.Err.Error() }
func (e *ResolveError) Unwrap() error { return e.Err }

// Hint is what to check.
func (e *ResolveError) Hint() string {
	return "nothing was written; check the network, or point at mirrors (boxes lock update --help)"
}

// Short abbreviates digests and commit IDs for a table; the lock has them whole.
func Short(v string) string {
	if d, ok := strings.CutPrefix(v, "sha256:"); ok && len(d) > 12 {
		return "sha256:" + d[:12]
	}
	if len(v) == 40 && strings.Trim(v, "0123456789abcdef") == "" {
		return v[:12]
	}
	return v
}
