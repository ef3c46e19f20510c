package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/docker"
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
		Args:  cobra.MaximumNArgs(1),
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
			return runApply(cmd.Context(), env, f, file)
		},
	}
	cmd.Flags().BoolVar(&f.autoApprove, "auto-approve", false, "apply without asking (deletes still need --confirm-delete)")
	cmd.Flags().StringSliceVar(&f.confirmDelete, "confirm-delete", nil, "allow deleting box NAME and its volumes (repeatable)")
	cmd.Flags().IntVar(&f.parallelism, "parallelism", 4, "boxes worked on at once")
	cmd.Flags().StringSliceVar(&f.replace, "replace", nil, "recreate box NAME even if nothing differs (repeatable)")
	cmd.Flags().StringSliceVar(&f.target, "target", nil, "limit to box NAME (repeatable)")
	return cmd
}

func runApply(ctx context.Context, env *Env, f applyFlags, planPath string) error {
	ws, err := openWorkspace(env, docker.Options{})
	if err != nil {
		return err
	}
	defer ws.Close()
	if err := ws.LockApply("boxes apply"); err != nil {
		return err
	}

	var p *reconcile.Plan
	if planPath != "" {
		saved, err := reconcile.ReadSaved(planPath, shown(planPath))
		if err != nil {
			return err
		}
		now, err := ws.Plan(ctx, saved.Options)
		if err != nil {
			return err
		}
		if err := saved.Fresh(shown(planPath), ws.Files, ws.Config.Fleet, ws.Observed, now); err != nil {
			return err
		}
		p = saved.Plan
	} else {
		p, err = ws.Plan(ctx, reconcile.PlanOptions{Replace: f.replace, Target: f.target})
		if err != nil {
			return err
		}
		p.RenderText(env.Out, colour(env))
		if !p.Changes() {
			return nil
		}
	}
	if !p.Changes() {
		fmt.Fprintln(env.Out, "No changes.")
		return nil
	}
	in := bufio.NewReader(env.In)
	if err := confirmDeletes(env, in, p, f.confirmDelete); err != nil {
		return err
	}
	if planPath == "" && !f.autoApprove {
		if !env.IsTTY {
			return withHint(errors.New("apply needs approval and there is no terminal to ask"), "pass --auto-approve, or save a plan with boxes plan -out FILE and run boxes apply FILE")
		}
		fmt.Fprint(env.Out, "\nDo you want to perform these actions?\n  Only 'yes' will be accepted to approve.\n\n  Enter a value: ")
		answer, _ := in.ReadString('\n')
		if strings.TrimSpace(answer) != "yes" {
			return errors.New("apply cancelled")
		}
	}
	start := time.Now()
	if err := execute(ctx, env, env.Out, ws, p, f.parallelism, nil); err != nil {
		return err
	}
	s := p.Summary()
	fmt.Fprintf(env.Out, "\nApply complete in %s: %d created, %d recreated, %d started, %d stopped, %d deleted.\n",
		time.Since(start).Round(100*time.Millisecond), s.Create, s.Recreate, s.Start, s.Stop, s.Delete)
	return nil
}

// execute runs p through the one applier, with live progress: apply's
// plans and the one-box plans of load, rm, start and stop alike. held
// names boxes whose lock the caller already holds.
func execute(ctx context.Context, env *Env, out io.Writer, ws *workspace.Workspace, p *reconcile.Plan, parallelism int, held map[string]bool) error {
	progress := newProgress(out, env.IsTTY, p)
	seeder, err := newSeeder(ctx, env, ws, p, progress)
	if err != nil {
		return err
	}
	for _, b := range p.Boxes {
		if b.Action != reconcile.NoOp {
			if _, err := ws.Engine(ctx, b.Host); err != nil {
				return err
			}
		}
	}
	// Secrets made readable by others get their modes back before anything else.
	fixed, err := ws.Tokens.Restrict()
	if err != nil {
		return err
	}
	for _, e := range fixed {
		env.Warnf("%s was readable by others; made it %04o", e.Path, e.Want)
	}
	applier := &reconcile.Applier{Config: ws.Config, Engines: ws.Engines(), Tokens: ws.Tokens, Parallelism: parallelism, Progress: progress, Held: held}
	if seeder != nil {
		applier.Seeder = seeder
	}
	err = applier.Apply(ctx, p)
	if failed, ok := err.(interface{ Unwrap() []error }); ok && len(p.Boxes) > 1 {
		n, all := len(failed.Unwrap()), len(p.Boxes)-p.Summary().NoOp
		summary := fmt.Errorf("apply failed for %d of %d boxes; the others were done", n, all)
		if n == all {
			summary = fmt.Errorf("apply failed for all %d boxes", n)
		}
		return withHint(errors.Join(err, summary), "boxes plan shows what is left")
	}
	return err
}

// confirmDeletes gets a typed name for every box the plan deletes, or its --confirm-delete.
func confirmDeletes(env *Env, in *bufio.Reader, p *reconcile.Plan, confirmed []string) error {
	ok := map[string]bool{}
	for _, n := range confirmed {
		ok[n] = true
	}
	var missing []string
	for _, name := range p.Deletes() {
		if !ok[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if !env.IsTTY {
		flags := make([]string, len(missing))
		for i, n := range missing {
			flags[i] = "--confirm-delete " + n
		}
		return withHint(fmt.Errorf("the plan deletes %s with its volumes, and there is no terminal to confirm it; nothing was changed", strings.Join(missing, ", ")), "pass %s", strings.Join(flags, " "))
	}
	for _, name := range missing {
		fmt.Fprintf(env.Out, "\nDeleting box %s removes its containers, network and volumes: its data.\n  Type the box's name to confirm: ", name)
		answer, _ := in.ReadString('\n')
		if strings.TrimSpace(answer) != name {
			return fmt.Errorf("delete of %s not confirmed; nothing was changed", name)
		}
	}
	return nil
}

// progress shows one line per box: redrawn in place on a terminal, else
// timestamped lines as steps happen.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	order []string
	lines map[string]string
	drawn int
}

func newProgress(w io.Writer, tty bool, p *reconcile.Plan) *progress {
	pr := &progress{w: w, tty: tty, lines: map[string]string{}}
	for _, b := range p.Boxes {
		if b.Action != reconcile.NoOp {
			pr.order = append(pr.order, b.Name)
			pr.lines[b.Name] = string(b.Action) + ": waiting"
		}
	}
	fmt.Fprintln(w)
	return pr
}

func (p *progress) Step(box, msg string) { p.set(box, msg) }

func (p *progress) Done(box string, err error) {
	if err != nil {
		p.set(box, "failed: "+err.Error())
		return
	}
	p.set(box, "done")
}

func (p *progress) set(box, msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lines[box] = msg
	if !p.tty {
		fmt.Fprintf(p.w, "%s %s: %s\n", time.Now().UTC().Format(time.RFC3339), box, msg)
		return
	}
	p.redraw()
}

func (p *progress) redraw() {
	if p.drawn > 0 {
		fmt.Fprintf(p.w, "\x1b[%dA", p.drawn)
	}
	for _, name := range p.order {
		fmt.Fprintf(p.w, "\x1b[2K%-12s %s\n", name, p.lines[name])
	}
	p.drawn = len(p.order)
}
