package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/workspace"
)

// formatFlags are the --json and --markdown of plan and diff.
type formatFlags struct{ json, markdown bool }

func (f *formatFlags) add(cmd *cobra.Command, jsonUsage string) {
	cmd.Flags().BoolVar(&f.json, "json", false, jsonUsage)
	cmd.Flags().BoolVar(&f.markdown, "markdown", false, "print the plan for a pull-request comment")
}

func (f formatFlags) check() error {
	if f.json && f.markdown {
		return errors.New("--json and --markdown cannot be combined")
	}
	return nil
}

// addPlanFlags adds --replace and --target, the options of a plan.
func addPlanFlags(cmd *cobra.Command, replace, target *[]string, targetUsage string) {
	cmd.Flags().StringSliceVar(replace, "replace", nil, "recreate box NAME even if nothing differs (repeatable)")
	cmd.Flags().StringSliceVar(target, "target", nil, targetUsage)
}

type planFlags struct {
	formatFlags
	detailedExitcode bool
	out              string
	replace, target  []string
}

func newPlanCommand(env *Env) *cobra.Command {
	var f planFlags
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Show what apply would do to every box, and why",
		Long: `Observe every host's engine and show what apply would do to every box, and
why: + create, ~ start or stop, -/+ recreate (containers replaced, volumes
kept), - delete (containers, network and volumes), move (to another host),
each with its reasons (old → new values). Nothing is changed.

--json prints the plan in its documented schema (format_version), and
--markdown for a pull-request comment. --detailed-exitcode exits 0 for no
changes, 2 for changes and 1 on error. -out FILE saves the plan, so that
apply FILE does exactly it or refuses when anything changed since.

  boxes plan
  boxes plan -out tomorrow.plan --target alpha
  boxes plan --replace beta     # recreate beta even if nothing differs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return err
			}
			return inWorkspace(env, func(ws *workspace.Workspace) error { return runPlan(cmd.Context(), env, ws, f) })
		},
	}
	f.add(cmd, fmt.Sprintf("print the plan as JSON (format_version %d)", reconcile.FormatVersion))
	cmd.Flags().BoolVar(&f.detailedExitcode, "detailed-exitcode", false, "exit 0 for no changes, 1 on error, 2 for changes")
	cmd.Flags().StringVarP(&f.out, "out", "o", "", "save the plan to FILE for boxes apply FILE")
	addPlanFlags(cmd, &f.replace, &f.target, "limit the plan to box NAME (repeatable)")
	return cmd
}

func runPlan(ctx context.Context, env *Env, ws *workspace.Workspace, f planFlags) error {
	opts := reconcile.PlanOptions{Replace: f.replace, Target: f.target}
	p, err := ws.Plan(ctx, opts)
	if err != nil {
		return err
	}
	switch {
	case f.json:
		if err := printJSON(env, p.JSON()); err != nil {
			return err
		}
	case f.markdown:
		// The view reviewers read at a glance once rendered (reconcile/markdown.go).
		p.RenderMarkdownView(env.Out, reconcile.MarkdownView{Title: "boxes plan"})
	default:
		p.RenderText(env.Out, colour(env))
	}
	if f.out != "" {
		if err := ws.WriteSaved(f.out, opts, p); err != nil {
			return err
		}
		if !f.json && !f.markdown {
			fmt.Fprintf(env.Out, "\nSaved the plan to %s. To perform exactly these actions, run: boxes apply %s\n", f.out, f.out)
		}
	}
	if f.detailedExitcode && p.Changes() {
		return &ExitError{Code: 2}
	}
	return nil
}

func colour(env *Env) bool {
	_, noColour := os.LookupEnv("NO_COLOR")
	return env.IsTTY && !noColour
}
