package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/pins"
	"github.com/hermes-box/boxes/spec"
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
		Long: "Resolve the newest version of each pin named (all when none is) and write it,\nwith its integrity hash, to boxes.lock:\n" + pins.Sources(78) + `.
Either every named pin resolves and the lock is written, or nothing is.

Registries: ` + pins.EnvNPM + ` (else npm_config_registry), ` + pins.EnvNode + `,
` + pins.EnvGitHubAPI + ` and ` + pins.EnvGitHub + ` point at mirrors.`,
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
	u, err := pins.FromEnv("boxes/"+versionString()).UpdateLock(ctx, env.LockFile(), shown(env.LockFile()), args,
		pins.UpdateOptions{Missing: f.missing, DryRun: f.dryRun}, docker.LocalRegistryDigest)
	if err != nil {
		return err
	}
	if u.Complete {
		fmt.Fprintln(env.Err, "boxes.lock has every pin; nothing to resolve")
	}
	if err := printChanges(env, f, u.Changes); err != nil || u.Complete {
		return err
	}
	switch {
	case !u.Changed:
		fmt.Fprintf(env.Err, "%s: every pin is the newest; nothing written\n", shown(env.LockFile()))
	case !u.Written:
		fmt.Fprintln(env.Err, "dry run: nothing written")
	default:
		fmt.Fprintf(env.Err, "%s: pins written; boxes build makes the image from them\n", shown(env.LockFile()))
	}
	return nil
}

func printChanges(env *Env, f lockUpdateFlags, changes []pins.Change) error {
	if !f.json {
		pins.WriteChanges(env.Out, changes)
		return nil
	}
	if changes == nil {
		changes = []pins.Change{}
	}
	return printJSON(env, changes)
}
