package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/reconcile"
)

type planFlags struct {
	json, markdown, detailedExitcode bool
	out                              string
	replace, target                  []string
}

func newPlanCommand(env *Env) *cobra.Command {
	var f planFlags
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Show what apply would do to every box, and why",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.json && f.markdown {
				return errors.New("--json and --markdown cannot be combined")
			}
			return runPlan(cmd.Context(), env, f)
		},
	}
	cmd.Flags().BoolVar(&f.json, "json", false, "print the plan as JSON (format_version 1)")
	cmd.Flags().BoolVar(&f.markdown, "markdown", false, "print the plan for a pull-request comment")
	cmd.Flags().BoolVar(&f.detailedExitcode, "detailed-exitcode", false, "exit 0 for no changes, 1 on error, 2 for changes")
	cmd.Flags().StringVarP(&f.out, "out", "o", "", "save the plan to FILE for boxes apply FILE")
	cmd.Flags().StringSliceVar(&f.replace, "replace", nil, "recreate box NAME even if nothing differs (repeatable)")
	cmd.Flags().StringSliceVar(&f.target, "target", nil, "limit the plan to box NAME (repeatable)")
	return cmd
}

func runPlan(ctx context.Context, env *Env, f planFlags) error {
	ws, err := openWorkspace(ctx, env, docker.Options{})
	if err != nil {
		return err
	}
	defer ws.close()
	p, err := ws.plan(ctx, planOptions{replace: f.replace, target: f.target})
	if err != nil {
		return planError(err)
	}
	switch {
	case f.json:
		if err := p.RenderJSON(env.Out); err != nil {
			return err
		}
	case f.markdown:
		p.RenderMarkdown(env.Out)
	default:
		p.RenderText(env.Out, colour(env))
	}
	if f.out != "" {
		if err := writePlanFile(f.out, ws.fingerprint(p), p); err != nil {
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

// planError adds the next step to the errors a user can fix.
func planError(err error) error {
	switch {
	case errors.Is(err, reconcile.ErrNoImage):
		return withHint(err, "boxes build makes the image and records it (or boxes lock image REF pins one the engine has)")
	case errors.Is(err, reconcile.ErrImageMissing):
		return withHint(err, "boxes build makes it on this engine (or boxes lock image REF pins one it has)")
	case errors.Is(err, reconcile.ErrUnmanagedConflict):
		return withHint(err, "boxes never touches resources it did not label; rename or remove them yourself, or rename the box")
	}
	return err
}

func colour(env *Env) bool {
	_, noColour := os.LookupEnv("NO_COLOR")
	return env.IsTTY && !noColour
}

// planFile is what plan -out saves: the plan and a fingerprint of what it saw. No secrets.
type planFile struct {
	FormatVersion string          `json:"format_version"`
	Fingerprint   string          `json:"fingerprint"`
	Plan          *reconcile.Plan `json:"plan"`
}

func writePlanFile(path, fingerprint string, p *reconcile.Plan) error {
	data, err := json.MarshalIndent(planFile{FormatVersion: reconcile.FormatVersion, Fingerprint: fingerprint, Plan: p}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

func readPlanFile(path string) (*planFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var pf planFile
	if err := json.Unmarshal(data, &pf); err != nil || pf.Plan == nil {
		return nil, fmt.Errorf("%s is not a saved boxes plan", path)
	}
	if pf.FormatVersion != reconcile.FormatVersion {
		return nil, fmt.Errorf("%s has plan format %q; this boxes reads %q", path, pf.FormatVersion, reconcile.FormatVersion)
	}
	return &pf, nil
}
