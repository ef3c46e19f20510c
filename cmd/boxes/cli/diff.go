package cli

import (
	"errors"
	"github.com/hermes-box/boxes/docker"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/diff"
)

type diffFlags struct {
	json, markdown, detailedExitcode bool
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
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return errors.New("diff takes at most one Git revision")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.json && f.markdown {
				return errors.New("--json and --markdown cannot be combined")
			}
			ref := "HEAD"
			if len(args) == 1 {
				ref = args[0]
			}
			return runDiff(cmd, env, f, ref)
		},
	}
	cmd.Flags().BoolVar(&f.json, "json", false, "print the plan as JSON (plan's format_version 1, with ref, commit, notes, unknown)")
	cmd.Flags().BoolVar(&f.markdown, "markdown", false, "print the plan for a pull-request comment")
	// Accepted from habit: diff's exit code is always detailed.
	cmd.Flags().BoolVar(&f.detailedExitcode, "detailed-exitcode", false, "")
	_ = cmd.Flags().MarkHidden("detailed-exitcode")
	return cmd
}

func runDiff(cmd *cobra.Command, env *Env, f diffFlags, ref string) error {
	ws, err := openWorkspace(env, docker.Options{})
	if err != nil {
		return err
	}
	defer ws.Close()
	cfg, lock := ws.Config, ws.Lock
	res, err := diff.Against(cmd.Context(), cfg, lock, ref)
	if errors.Is(err, diff.ErrBadRef) {
		return withHint(err, "name a branch, tag or commit, e.g. boxes diff origin/main (in CI, fetch the base branch first)")
	}
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
}
