package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/diff"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/workspace"
)

type diffFlags struct {
	formatFlags
	detailedExitcode bool
}

func newDiffCommand(env *Env) *cobra.Command {
	var f diffFlags
	cmd := &cobra.Command{
		Use:   "diff [REF]",
		Short: "Show the plan this change to boxes.yaml and boxes.lock makes against Git revision REF, with no engine",
		Long: `Show the plan that the working tree's boxes.yaml and boxes.lock make against
the fleet declared at Git revision REF (default HEAD), as if REF had been
applied: which boxes are created, recreated (and why), started, stopped or
deleted. No engine is contacted, so drift on the engines, volume sizes,
backups and whether an engine has the image are not known; boxes plan shows
them. Made for pull requests checked by CI without access to the engines:

  boxes diff --markdown origin/main

The exit code is always detailed, as plan --detailed-exitcode's: 0 no
changes, 1 error, 2 changes.`,
		Args: between(0, 1, "diff takes at most one Git revision"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(); err != nil {
				return err
			}
			ref := "HEAD"
			if len(args) == 1 {
				ref = args[0]
			}
			return runDiff(cmd, env, f, ref)
		},
	}
	f.add(cmd, fmt.Sprintf("print the plan as JSON (plan's format_version %d, with ref, commit, notes, unknown)", reconcile.FormatVersion))
	// Accepted from habit: diff's exit code is always detailed.
	cmd.Flags().BoolVar(&f.detailedExitcode, "detailed-exitcode", false, "")
	_ = cmd.Flags().MarkHidden("detailed-exitcode")
	return cmd
}

func runDiff(cmd *cobra.Command, env *Env, f diffFlags, ref string) error {
	return inWorkspace(env, func(ws *workspace.Workspace) error {
		res, err := diff.Against(cmd.Context(), ws.Config, ws.Lock, ref)
		if err != nil {
			return err
		}
		switch {
		case f.json:
			if err := printJSON(env, res.JSON()); err != nil {
				return err
			}
		case f.markdown:
			res.RenderMarkdown(env.Out)
		default:
			res.RenderText(env.Out, colour(env))
		}
		if res.Plan.Changes() {
			return &ExitError{Code: 2}
		}
		return nil
	})
}
