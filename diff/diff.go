// Package diff plans a change to boxes.yaml and boxes.lock with no engine:
// the plan that the working tree's files would make against a fleet in the
// state declared at a Git revision, as if that revision had been applied. It
// is what a pull request's CI job can show without access to the engines.
package diff

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
)

// Token stands in for every box's token on both sides: tokens are not in Git,
// and the same value on both sides keeps them out of the config hashes' difference.
const Token = "boxes-diff-placeholder-token"

// ErrBadRef is returned when REF names no commit.
var ErrBadRef = hint.New("not a commit", "name a branch, tag or commit, e.g. boxes diff origin/main (in CI, fetch the base branch first)")

// Unknown is what a diff cannot know without the engines, in the order shown.
var Unknown = []string{
	"drift on the engines (boxes stopped, changed or removed by hand)",
	"volume sizes",
	"backups",
	"whether each engine has the image",
}

// Result is a diff's plan and what it was made against.
type Result struct {
	// Ref is the revision as the user gave it; Commit its full hash.
	Ref    string
	Commit string
	Plan   *reconcile.Plan
	// Notes say how REF's files were taken where they were not a plain fleet.
	Notes []string
}

// Against plans cfg and lock (the working tree's, read by the caller; lock may
// be nil) against the files at the same paths at Git revision ref.
func Against(ctx context.Context, cfg *spec.Config, lock *spec.Lock, ref string) (*Result, error) {
	if ref == "" {
		ref = "HEAD"
	}
	dir, base := filepath.Dir(cfg.Path), filepath.Base(cfg.Path)
	r := repo{dir: dir}
	commit, err := r.commit(ctx, ref)
	if err != nil {
		return nil, err
	}
	prefix, err := r.git(ctx, "rev-parse", "--show-prefix")
	if err != nil {
		return nil, err
	}
	prefix = strings.TrimSpace(prefix)
	res := &Result{Ref: ref, Commit: commit}

	old, oldImage, err := r.fleetAt(ctx, res, cfg, commit, prefix, base)
	if err != nil {
		return nil, err
	}
	observed, err := reconcile.Applied(old, oldImage, Token, cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("the fleet at %s: %w", ref, err)
	}
	image := ""
	if lock != nil && lock.Image != nil {
		image = lock.Image.ID
	}
	hosts := []string{""}
	for name := range cfg.Hosts {
		hosts = append(hosts, name)
	}
	for _, h := range hosts {
		if observed[h] == nil {
			observed[h] = &engine.Observed{Host: h, Images: map[string]bool{}}
		}
	}
	for _, o := range observed {
		// Whether an engine has the image is among what a diff cannot know.
		o.Images[image] = image != ""
	}
	tokens := map[string]string{}
	for _, b := range cfg.Boxes {
		tokens[b.Name] = Token
	}
	p, err := reconcile.NewPlan(reconcile.Input{Config: cfg, Image: image, Observed: observed, Tokens: tokens})
	if err != nil {
		return nil, err
	}
	// What a delete takes is known only to the engines: say so.
	for _, b := range p.Boxes {
		if d := b.Delete; d != nil {
			d.BackupUnknown = true
			for i := range d.Volumes {
				d.Volumes[i].Unread = "no engine"
			}
		}
	}
	res.Plan = p
	return res, nil
}

// fleetAt is boxes.yaml at commit (res.Ref), as the working tree's at
// cfg.Path would see it, and the image its lock pins; nil when there was
// none or it could not have been applied, which res.Notes then says.
func (r repo) fleetAt(ctx context.Context, res *Result, cfg *spec.Config, commit, prefix, base string) (*spec.Config, string, error) {
	ref := res.Ref
	var old *spec.Config
	yamlData, ok, err := r.show(ctx, commit, base)
	if err != nil {
		return nil, "", err
	}
	if !ok {
		res.Notes = append(res.Notes, fmt.Sprintf("%s%s does not exist at %s: a new fleet, every box is created", prefix, base, ref))
	} else if old, err = spec.Parse(ref+":"+prefix+base, []byte(yamlData)); err != nil {
		return nil, "", fmt.Errorf("boxes.yaml at %s: %w", ref, err)
	}
	oldImage := ""
	if old != nil {
		lockData, ok, err := r.show(ctx, commit, "boxes.lock")
		if err != nil {
			return nil, "", err
		}
		if ok {
			l, err := spec.ParseLock(ref+":"+prefix+"boxes.lock", []byte(lockData))
			if err != nil {
				return nil, "", fmt.Errorf("boxes.lock at %s: %w", ref, err)
			}
			if l.Image != nil {
				oldImage = l.Image.ID
			}
		}
		if oldImage == "" && len(old.Boxes) > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("boxes.lock at %s has no image, so its boxes could not have been applied: every box is created", ref))
			old = nil
		}
	}
	if old != nil {
		// Hashes depend on where boxes.yaml is: both sides are hashed at the working tree's path.
		old.Path = cfg.Path
		// Without a fleet: key the fleet is the directory's name, the same
		// directory on both sides.
		if old.FleetImplied {
			old.Fleet = cfg.Fleet
		}
	}
	return old, oldImage, nil
}

// repo runs git in the directory of boxes.yaml, which need not be the top of
// the repository: paths are given as ./NAME, relative to it.
type repo struct{ dir string }

func (r repo) git(ctx context.Context, args ...string) (string, error) {
	out, stderr, err := r.run(ctx, args...)
	if err != nil {
		return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), firstLine(stderr, err))
	}
	return out, nil
}

func (r repo) run(ctx context.Context, args ...string) (string, string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", r.dir}, args...)...)
	cmd.Env = append(cmd.Environ(), "LC_ALL=C", "GIT_TERMINAL_PROMPT=0")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func (r repo) commit(ctx context.Context, ref string) (string, error) {
	if strings.HasPrefix(ref, "-") {
		return "", fmt.Errorf("%s: %w", ref, ErrBadRef)
	}
	if _, stderr, err := r.run(ctx, "rev-parse", "--git-dir"); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", errors.New("boxes diff needs git, which is not on PATH")
		}
		return "", fmt.Errorf("%s is not in a Git repository: %s", r.dir, firstLine(stderr, err))
	}
	out, _, err := r.run(ctx, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("%s: %w", ref, ErrBadRef)
	}
	return strings.TrimSpace(out), nil
}

// show is the content of file (beside boxes.yaml) at commit; ok is false when
// the file does not exist there.
func (r repo) show(ctx context.Context, commit, file string) (string, bool, error) {
	out, stderr, err := r.run(ctx, "show", commit+":./"+file)
	if err == nil {
		return out, true, nil
	}
	if strings.Contains(stderr, "does not exist") || strings.Contains(stderr, "exists on disk, but not in") {
		return "", false, nil
	}
	return "", false, fmt.Errorf("reading %s at %s: %s", file, commit, firstLine(stderr, err))
}

func firstLine(stderr string, err error) string {
	s := strings.TrimSpace(stderr)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimPrefix(s, "fatal: ")
	if s == "" {
		return err.Error()
	}
	return s
}
