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
		ValidArgs: spec.PinNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			return lockUpdate(cmd.Context(), env, f, args)
		},
	}
	cmd.Flags().BoolVar(&f.missing, "missing", false, "resolve only the named pins the lock lacks")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "show what would change; write nothing")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the changes as JSON on stdout")
	return cmd
}

func lockUpdate(ctx context.Context, env *Env, f lockUpdateFlags, args []string) error {
	names, err := pins.Select(args)
	var unknown *pins.UnknownPinError
	if errors.As(err, &unknown) {
		return withHint(err, "the pins are %s", strings.Join(spec.PinNames, ", "))
	}
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
		names = slices.DeleteFunc(names, func(n string) bool { return pins.Has(lock.Pins, n) })
		if len(names) == 0 {
			fmt.Fprintln(env.Err, "boxes.lock has every pin; nothing to resolve")
			return printChanges(env, f, nil)
		}
	}

	updated, changes, err := registryResolver().Update(ctx, lock.Pins, names, baseDigest)
	if err != nil {
		return withHint(err, "nothing was written; check the network, or point at mirrors (boxes lock update --help)")
	}

	changed := slices.ContainsFunc(changes, func(c pins.Change) bool { return c.Changed })
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

func printChanges(env *Env, f lockUpdateFlags, changes []pins.Change) error {
	if f.json {
		if changes == nil {
			changes = []pins.Change{}
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

// baseDigest asks the local engine's registry access for image's digest.
func baseDigest(ctx context.Context, image string) (string, error) {
	e, err := docker.Connect(ctx, spec.Host{}, docker.Options{})
	if err != nil {
		return "", err
	}
	defer e.Close()
	return e.RegistryDigest(ctx, image)
}
