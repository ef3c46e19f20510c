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
	jsonFlag(cmd, &f.json, "print the changes as JSON on stdout")
	return cmd
}

func lockUpdate(ctx context.Context, env *Env, f lockUpdateFlags, args []string) error {
	u, err := pins.FromEnv("boxes/"+versionString()).UpdateLock(ctx, env.LockFile(), shown(env.LockFile()), args,
		pins.UpdateOptions{Missing: f.missing, DryRun: f.dryRun}, docker.LocalRegistryDigest)
	if err != nil {
		return err
	}
	// Told first when there was nothing to resolve, after the changes otherwise.
	lock := shown(env.LockFile())
	if u.Complete {
		fmt.Fprintln(env.Err, u.Outcome(lock))
	}
	if err := printed(env, f.json, u.JSON(), u.WriteText); err != nil || u.Complete {
		return err
	}
	fmt.Fprintln(env.Err, u.Outcome(lock))
	return nil
}
