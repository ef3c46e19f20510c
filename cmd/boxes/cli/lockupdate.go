package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/pins"
	"github.com/hermes-box/boxes/spec"
)

// defaultBase is the base image a lock without one is pinned to.
const defaultBase = "ubuntu:24.04"

// The environment variables that point lock update at other registries.
const (
	envNPM       = "BOXES_NPM_REGISTRY"
	envNode      = "BOXES_NODE_DIST"
	envGitHubAPI = "BOXES_GITHUB_API"
	envGitHub    = "BOXES_GITHUB_DOWNLOADS"
)

type lockUpdateFlags struct {
	missing bool
	dryRun  bool
	json    bool
}

func newLockUpdateCommand(env *Env) *cobra.Command {
	var f lockUpdateFlags
	cmd := &cobra.Command{
		Use:   "update [PIN…]",
		Short: "Resolve the newest versions and integrity hashes of the pins (network)",
		Long: `Resolve the newest version of each pin named (all when none is) and write it,
with its integrity hash, to boxes.lock: base (the base image's digest, through
the engine's registry access), node (newest LTS of the pinned major, and the
linux-x64 tarball's SHA-256), claude, codex and executor (npm latest and its
integrity), hermes (the newest release's commit) and uv (latest release and
its SHA-256). Either every named pin resolves and the lock is written, or
nothing is written.

Registries: ` + envNPM + ` (else npm_config_registry), ` + envNode + `,
` + envGitHubAPI + ` and ` + envGitHub + ` point at mirrors.`,
		ValidArgs: updatable(),
		RunE: func(cmd *cobra.Command, args []string) error {
			return lockUpdate(cmd.Context(), env, f, args)
		},
	}
	cmd.Flags().BoolVar(&f.missing, "missing", false, "resolve only the named pins the lock lacks")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "show what would change; write nothing")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the changes as JSON on stdout")
	return cmd
}

// updatable lists the pins lock update resolves, in lock order.
func updatable() []string { return append([]string{"base"}, pins.Tools...) }

// pinChange is one pin before and after, and lock update --json's element.
type pinChange struct {
	Pin     string `json:"pin"`
	Old     string `json:"old,omitempty"`
	New     string `json:"new"`
	From    string `json:"from,omitempty"`
	Changed bool   `json:"changed"`
}

func lockUpdate(ctx context.Context, env *Env, f lockUpdateFlags, args []string) error {
	names, err := pinNames(args)
	if err != nil {
		return err
	}
	lock, err := loadLock(env)
	if err != nil {
		return err
	}
	if lock == nil {
		lock = &spec.Lock{Version: 1}
	}
	if f.missing {
		names = slices.DeleteFunc(names, func(n string) bool { return pinSet(lock.Pins, n) })
		if len(names) == 0 {
			fmt.Fprintln(env.Err, "boxes.lock has every pin; nothing to resolve")
			return printChanges(env, f, nil)
		}
	}

	updated := lock.Pins
	var changes []pinChange
	var errs []error
	tools := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "base" })
	if len(tools) > 0 {
		results, err := registryResolver().ResolveAll(ctx, tools, func(tool string) spec.ToolPin { return *lock.Pins.Tool(tool) })
		errs = append(errs, err)
		for _, tool := range tools {
			if res, ok := results[tool]; ok {
				*updated.Tool(tool) = res.Pin
				changes = append(changes, toolChange(tool, *lock.Pins.Tool(tool), res))
			}
		}
	}
	if slices.Contains(names, "base") {
		c, err := updateBase(ctx, &updated.Base)
		errs = append(errs, err)
		if err == nil {
			changes = append([]pinChange{c}, changes...)
		}
	}
	if failed := errors.Join(errs...); failed != nil {
		return withHint(failed, "nothing was written; check the network, or point at mirrors (boxes lock update --help)")
	}

	changed := slices.ContainsFunc(changes, func(c pinChange) bool { return c.Changed })
	if changed && !f.dryRun {
		lock.Pins = updated
		if err := spec.WriteLock(env.LockFile(), lock); err != nil {
			return err
		}
	}
	if err := printChanges(env, f, changes); err != nil {
		return err
	}
	switch {
	case !changed:
		fmt.Fprintf(env.Err, "%s: every pin is the newest; nothing written\n", shown(env.LockFile()))
	case f.dryRun:
		fmt.Fprintln(env.Err, "dry run: nothing written")
	default:
		fmt.Fprintf(env.Err, "%s: pins written; boxes build makes the image from them\n", shown(env.LockFile()))
	}
	return nil
}

// pinNames checks the PIN arguments; none means every pin.
func pinNames(args []string) ([]string, error) {
	all := updatable()
	if len(args) == 0 {
		return all, nil
	}
	var names []string
	for _, a := range args {
		if !slices.Contains(all, a) {
			return nil, withHint(fmt.Errorf("lock update: unknown pin %q", a), "the pins are %s", strings.Join(all, ", "))
		}
		if !slices.Contains(names, a) {
			names = append(names, a)
		}
	}
	return names, nil
}

// pinSet reports whether the lock has pin name, integrity included where
// the build needs one.
func pinSet(p spec.Pins, name string) bool {
	if name == "base" {
		return p.Base.Image != "" && p.Base.Digest != ""
	}
	t := p.Tool(name)
	return t.Version != "" && (name == "hermes" || t.Integrity != "")
}

// registryResolver asks the public registries, or the mirrors the environment names.
func registryResolver() *pins.Resolver {
	npm := os.Getenv(envNPM)
	if npm == "" {
		npm = os.Getenv("npm_config_registry")
	}
	return &pins.Resolver{
		NPM:       npm,
		Node:      os.Getenv(envNode),
		GitHubAPI: os.Getenv(envGitHubAPI),
		GitHub:    os.Getenv(envGitHub),
		UserAgent: "boxes/" + versionString(),
	}
}

func toolChange(tool string, old spec.ToolPin, res pins.Result) pinChange {
	return pinChange{
		Pin: tool, Old: old.Version, New: res.Pin.Version, From: res.From,
		Changed: old != res.Pin,
	}
}

// updateBase pins the base image to the digest its registry has now.
func updateBase(ctx context.Context, base *spec.BasePin) (pinChange, error) {
	image := base.Image
	if image == "" {
		image = defaultBase
	}
	// A reference already carrying a digest is asked for by its tag.
	image, _, _ = strings.Cut(image, "@")
	e, err := docker.Connect(ctx, spec.Host{}, docker.Options{})
	if err != nil {
		return pinChange{}, err
	}
	defer e.Close()
	digest, err := e.RegistryDigest(ctx, image)
	if err != nil {
		return pinChange{}, fmt.Errorf("base: %w", err)
	}
	c := pinChange{Pin: "base", Old: base.Digest, New: digest, From: image, Changed: base.Image != image || base.Digest != digest}
	*base = spec.BasePin{Image: image, Digest: digest}
	return c, nil
}

func printChanges(env *Env, f lockUpdateFlags, changes []pinChange) error {
	if f.json {
		if changes == nil {
			changes = []pinChange{}
		}
		enc := json.NewEncoder(env.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(changes)
	}
	for _, c := range changes {
		switch {
		case !c.Changed:
			fmt.Fprintf(env.Out, "  %-9s %s (newest)\n", c.Pin, short(c.New))
		case c.Old == "":
			fmt.Fprintf(env.Out, "+ %-9s %s (%s)\n", c.Pin, short(c.New), c.From)
		case c.Old == c.New:
			fmt.Fprintf(env.Out, "~ %-9s %s, integrity changed (%s)\n", c.Pin, short(c.New), c.From)
		default:
			fmt.Fprintf(env.Out, "~ %-9s %s -> %s (%s)\n", c.Pin, short(c.Old), short(c.New), c.From)
		}
	}
	return nil
}

// short abbreviates digests and commit IDs for the table; the lock has them whole.
func short(v string) string {
	if d, ok := strings.CutPrefix(v, "sha256:"); ok && len(d) > 12 {
		return "sha256:" + d[:12]
	}
	if len(v) == 40 && strings.Trim(v, "0123456789abcdef") == "" {
		return v[:12]
	}
	return v
}
