package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"filippo.io/age"
	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/apply"
	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/internal/text"
	"github.com/hermes-box/boxes/progress"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/workspace"
)

type applyFlags struct {
	autoApprove   bool
	confirmDelete []string
	parallelism   int
	replace       []string
	target        []string
}

func newApplyCommand(env *Env) *cobra.Command {
	var f applyFlags
	cmd := &cobra.Command{
		Use:   "apply [PLANFILE]",
		Short: "Make every box match boxes.yaml and boxes.lock",
		Long: `Make every box match boxes.yaml and boxes.lock: plan, show the plan, ask for
yes (unless --auto-approve), then do it, boxes in parallel (--parallelism),
each box's steps in order, with live progress. With PLANFILE (from plan
-out) it does exactly that plan, or refuses with "plan is stale" when the
files or the engines changed since.

Deleting a box deletes its volumes, its data: apply asks for the box's name
to be typed, or takes --confirm-delete NAME; without a terminal and without
it apply refuses before changing anything. A moved box's old copy is
deleted only so confirmed, once the new copy is verified. One apply runs at
a time per boxes.yaml. Exits 1 if any box failed.

  boxes apply
  boxes apply --auto-approve --confirm-delete old
  boxes apply tomorrow.plan`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.parallelism < 1 {
				return errors.New("--parallelism must be at least 1")
			}
			file := ""
			if len(args) == 1 {
				file = args[0]
				if len(f.replace) > 0 || len(f.target) > 0 {
					return errors.New("--replace and --target belong to the plan; a saved plan already carries them")
				}
			}
			return inWorkspace(env, func(ws *workspace.Workspace) error { return runApply(cmd.Context(), env, ws, f, file) })
		},
	}
	cmd.Flags().BoolVar(&f.autoApprove, "auto-approve", false, "apply without asking (deletes still need --confirm-delete)")
	cmd.Flags().StringSliceVar(&f.confirmDelete, "confirm-delete", nil, "allow deleting box NAME and its volumes (repeatable)")
	cmd.Flags().IntVar(&f.parallelism, "parallelism", 4, "boxes worked on at once")
	addPlanFlags(cmd, &f.replace, &f.target, "limit to box NAME (repeatable)")
	return cmd
}

func runApply(ctx context.Context, env *Env, ws *workspace.Workspace, f applyFlags, planPath string) error {
	p, err := ws.PlanToApply(ctx, "boxes apply", planPath, shown(planPath), reconcile.PlanOptions{Replace: f.replace, Target: f.target})
	if err != nil {
		return err
	}
	if planPath == "" {
		// A new plan is shown, its text saying when nothing changes.
		p.RenderText(env.Out, colour(env))
	}
	for _, name := range p.NotDeleted(f.confirmDelete) {
		env.Warnf("--confirm-delete %s: the plan deletes no box %s (nor the old copy of a move); ignored", name, name)
	}
	if !p.Changes() {
		if planPath != "" {
			fmt.Fprintln(env.Out, "No changes.")
		}
		return nil
	}
	in := bufio.NewReader(env.In)
	if err := confirmDeletes(env, in, p, f.confirmDelete); err != nil {
		return err
	}
	moves := confirmMoves(env, in, p, f.confirmDelete)
	if planPath == "" && !f.autoApprove {
		if !env.IsTTY {
			return hint.Wrap(errors.New("apply needs approval and there is no terminal to ask"), "pass --auto-approve, or save a plan with boxes plan -out FILE and run boxes apply FILE")
		}
		if ask(env.Out, in, "\nDo you want to perform these actions?\n  Only 'yes' will be accepted to approve.\n\n  Enter a value: ") != "yes" {
			return errors.New("apply cancelled")
		}
	}
	start := time.Now()
	o := applyOptions(ctx, env, env.Out, f.parallelism)
	o.ConfirmedDeletes = moves
	if err := ws.Apply(ctx, p, o); err != nil {
		return err
	}
	fmt.Fprintf(env.Out, "\nApply complete in %s: %s.\n", time.Since(start).Round(100*time.Millisecond), p.Summary().Done())
	return reapLeases(ctx, env, ws, f.target)
}

// reapLeases resets the expired leases of the pools, apply's last step
// (not of a plan limited by --target).
func reapLeases(ctx context.Context, env *Env, ws *workspace.Workspace, target []string) error {
	if (len(ws.Config.Pools) == 0 && !ws.HasLeases()) || len(target) > 0 {
		return nil
	}
	n, err := ws.ReapExpired(ctx, leaseOptions(ctx, env))
	if n > 0 {
		fmt.Fprintf(env.Out, "Reset %s whose lease expired.\n", text.Plural(n, "pool box", "pool boxes"))
	}
	return err
}

// applyOptions are how the command line runs a plan through the one
// applier, parallelism boxes at once, with live progress on out: apply's
// plans and the one-box plans of load, rm, start and stop alike.
func applyOptions(ctx context.Context, env *Env, out io.Writer, parallelism int) workspace.ApplyOptions {
	return workspace.ApplyOptions{
		Parallelism: parallelism,
		Progress: func(p *reconcile.Plan) apply.Progress {
			order, actions := p.Changing()
			return progress.NewBoxes(out, env.IsTTY, order, actions)
		},
		Identities: func(path string) ([]age.Identity, error) { return openIdentity(ctx, env, path) },
		Checked:    func(c backup.Checked) { c.WriteText(env.Err, shown) },
		Init:       hb.Wait{Timeout: InitTimeout},
		Writer:     "boxes " + versionString(),
	}
}

// confirmDeletes gets a typed name for every box the plan deletes, or its --confirm-delete.
func confirmDeletes(env *Env, in *bufio.Reader, p *reconcile.Plan, confirmed []string) error {
	missing := p.Unconfirmed(confirmed)
	if len(missing) == 0 {
		return nil
	}
	if !env.IsTTY {
		return reconcile.UnconfirmedError(missing)
	}
	for _, name := range missing {
		if ask(env.Out, in, "\nDeleting box "+name+" removes its containers, network and volumes: its data.\n  Type the box's name to confirm: ") != name {
			return fmt.Errorf("delete of %s not confirmed; nothing was changed", name)
		}
	}
	return nil
}

// confirmMoves names the moved boxes whose old copy apply may delete once
// the new one is verified: those named by --confirm-delete, or whose name
// is typed at the terminal. Without either the old copy stays, stopped.
func confirmMoves(env *Env, in *bufio.Reader, p *reconcile.Plan, confirmed []string) map[string]bool {
	out, undecided := p.MovesToConfirm(confirmed)
	for _, b := range undecided {
		if env.IsTTY && ask(env.Out, in, fmt.Sprintf("\nBox %s moves from %s to %s. Once the new copy is verified, the old copy on %s can be deleted with its volumes.\n  Type the box's name to delete it, or press Enter to keep it (stopped): ",
			b.Name, reconcile.HostName(b.Move.From), reconcile.HostName(b.Move.To), reconcile.HostName(b.Move.From))) == b.Name {
			out[b.Name] = true
		}
	}
	return out
}

// ask prints prompt to w and reads one answer line from in, trimmed.
func ask(w io.Writer, in *bufio.Reader, prompt string) string {
	fmt.Fprint(w, prompt)
	answer, _ := in.ReadString('\n')
	return strings.TrimSpace(answer)
}
