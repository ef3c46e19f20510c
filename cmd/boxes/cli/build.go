package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/image/build"
)

type buildFlags struct {
	tag     string
	base    string
	recipe  string
	offline bool
	force   bool
	noLock  bool
	push    string
	quiet   bool
	json    bool
}

func newBuildCommand(env *Env) *cobra.Command {
	var f buildFlags
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build the box image from the pins in boxes.lock and record it there",
		Long: `Build the box image from the recipe built into boxes (the Dockerfile,
provision/, guest/) with the versions pinned in boxes.lock, then write the
lock's image section: the image ID, the digest of the build inputs, the tool
versions read from inside the image, and the build time.

When the lock's inputs digest matches and the engine still has that image,
build says so and does nothing; --force rebuilds.

--push REPO then pushes the image (built or current) to REPO with the
credentials of this machine's docker configuration and records the pushed
digest as the lock's image ref: hosts that lack the image pull it by digest.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBuild(cmd.Context(), env, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.tag, "tag", "t", "", "tag the image as REF (default "+compose.ManagedLabel+":<first 12 digits of the inputs digest>)")
	fl.StringVar(&f.base, "base", "", "build FROM this image instead of the lock's base (a mirror, or a local base with --offline)")
	fl.StringVar(&f.recipe, "recipe", "", "build from the recipe in DIR (holding Dockerfile, provision/, guest/: a source tree's root) instead of the built-in one")
	fl.BoolVar(&f.offline, "offline", false, "switch off every network install (INSTALL_*=0); needs no tool pins")
	fl.BoolVar(&f.force, "force", false, "build even when the lock's image is current (the layer cache still applies)")
	fl.BoolVar(&f.noLock, "no-lock", false, "build and tag only; leave boxes.lock as it is")
	fl.StringVar(&f.push, "push", "", pushUsage)
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "show the build steps but not the commands' output")
	jsonFlag(cmd, &f.json, resultJSON)
	return cmd
}

func runBuild(ctx context.Context, env *Env, f buildFlags) error {
	o := build.Options{Tag: f.tag, Base: f.base, Offline: f.offline, Force: f.force, NoLock: f.noLock, Push: f.push, Line: build.Printer(env.Err, f.quiet)}
	rep, err := build.BuildLock(ctx, env.LockFile(), shown(env.LockFile()), f.recipe, o)
	if err != nil {
		return err
	}
	return printed(env, f.json, rep, rep.WriteText)
}
