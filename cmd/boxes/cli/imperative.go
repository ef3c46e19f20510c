package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/workspace"
)

// boxOp runs fn on the box that locked finds: its lock is taken before
// the box is observed, and only the box's host is reached.
func boxOp(env *Env, locked func(ws *workspace.Workspace) (string, engine.Resources, error), fn func(ws *workspace.Workspace, host string, r engine.Resources) error) error {
	return inWorkspace(env, func(ws *workspace.Workspace) error {
		host, r, err := locked(ws)
		if err != nil {
			return err
		}
		return fn(ws, host, r)
	})
}

// runOne runs a one-box plan through the applier; its progress goes to stderr.
func runOne(ctx context.Context, env *Env, ws *workspace.Workspace, p *reconcile.Plan) error {
	return ws.ApplyOne(ctx, p, applyOptions(ctx, env, env.Err, 1))
}

func newStopCommand(env *Env) *cobra.Command {
	return newStateCommand(env, "stop", "Stop a box now (plan then reports any drift from boxes.yaml)", `Stop box NAME's containers now, under the box's lock; its volumes and
settings stay. A box declared running in boxes.yaml is then drift: plan
shows its start, and the next apply starts it again.`, "stopped", (*workspace.Workspace).StopPlan)
}

func newStartCommand(env *Env) *cobra.Command {
	return newStateCommand(env, "start", "Start a stopped box now", `Start box NAME's containers now, under the box's lock, and wait until it is
ready (its executor answers and hb init has finished). A box declared
stopped in boxes.yaml is then drift: plan shows its stop.`, "running", (*workspace.Workspace).StartPlan)
}

// newStateCommand is stop or start (verb): the one-box plan of plan run
// under the box's lock; the box is then in state, and the command says so.
func newStateCommand(env *Env, verb, short, long, state string, plan func(ws *workspace.Workspace, host, name string, r engine.Resources) (*reconcile.Plan, error)) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use: verb + " NAME", Short: short, Long: long, Args: exactlyOne(verb, "box name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			locked := func(ws *workspace.Workspace) (string, engine.Resources, error) {
				return ws.LockedBox(cmd.Context(), name, "boxes "+verb)
			}
			return boxOp(env, locked, func(ws *workspace.Workspace, host string, r engine.Resources) error {
				p, err := plan(ws, host, name, r)
				if err == nil {
					err = runOne(cmd.Context(), env, ws, p)
				}
				if err != nil {
					return err
				}
				res := workspace.Changed(name, host, state)
				return printed(env, asJSON, res, res.WriteText)
			})
		},
	}
	jsonFlag(cmd, &asJSON, resultJSON)
	return cmd
}

func newRmCommand(env *Env) *cobra.Command {
	var confirm, confirmDelete string
	var asJSON bool
	cmd := &cobra.Command{
		Use: "rm NAME", Short: "Delete a box now: containers, network and volumes",
		Long: `Delete box NAME now, under the box's lock: its containers, network and
volumes, so its data. rm first shows what goes and the box's newest backup,
then asks for the box's name to be typed; --confirm NAME (or
--confirm-delete NAME, as apply spells it) confirms without a prompt, and
without a terminal one of them is needed. A box still declared in
boxes.yaml is created again by the next apply (empty, or seeded from its
restore: archive).

  boxes save old && boxes rm old --confirm old`,
		Args: exactlyOne("rm", "box name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			confirmed, err := rmConfirmation(name, confirm, confirmDelete)
			if err != nil {
				return err
			}
			// rm alone reaches a box of no fleet.
			locked := func(ws *workspace.Workspace) (string, engine.Resources, error) {
				return ws.LockedRemoval(cmd.Context(), name)
			}
			return boxOp(env, locked, func(ws *workspace.Workspace, host string, r engine.Resources) error {
				res, p := ws.Removal(name, host, r)
				// With --json, stdout holds only the result.
				talk := env.Out
				if asJSON {
					talk = env.Err
				}
				res.WriteDeleting(talk)
				if err := confirmNameOn(env, talk, name, confirmed, "Type the box's name to delete it with its volumes: ",
					fmt.Errorf("rm deletes %s's data and there is no terminal to confirm it; nothing was changed", name)); err != nil {
					return err
				}
				if err := runOne(cmd.Context(), env, ws, p); err != nil {
					return err
				}
				if err := printed(env, asJSON, res, res.WriteText); err != nil {
					return err
				}
				if *res.Declared {
					env.Warnf("%s is still declared in boxes.yaml; the next apply creates it again", name)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&confirm, "confirm", "", "the box's name, to delete without a prompt")
	cmd.Flags().StringVar(&confirmDelete, "confirm-delete", "", "the same as --confirm, as apply spells it")
	jsonFlag(cmd, &asJSON, resultJSON)
	return cmd
}

// checkConfirm refuses a --confirm that does not name box name, before
// anything is done.
func checkConfirm(name, confirm string) error {
	if confirm != "" && confirm != name {
		return hint.Wrap(fmt.Errorf("--confirm %s does not name the box, %s; nothing was changed", confirm, name), "pass --confirm %s", name)
	}
	return nil
}

// confirmName is confirmNameOn on stdout.
func confirmName(env *Env, name, confirmed, prompt string, noTerminal error) error {
	return confirmNameOn(env, env.Out, name, confirmed, prompt, noTerminal)
}

// confirmNameOn has box name typed after prompt, on talk, unless confirmed
// (a --confirm already checked) names it; without a terminal it fails with
// noTerminal, and the hint to pass --confirm.
func confirmNameOn(env *Env, talk io.Writer, name, confirmed, prompt string, noTerminal error) error {
	if confirmed == name {
		return nil
	}
	if !env.IsTTY {
		return hint.Wrap(noTerminal, "pass --confirm %s", name)
	}
	if ask(talk, bufio.NewReader(env.In), prompt) != name {
		return errors.New("not confirmed; nothing was changed")
	}
	return nil
}

// rmConfirmation is the box name rm's --confirm gives, or --confirm-delete
// (apply's spelling, taken too); "" when neither is given. A name that is
// not the box's, or two that differ, is refused.
func rmConfirmation(name, confirm, confirmDelete string) (string, error) {
	flag, given := "--confirm", confirm
	if confirmDelete != "" {
		if confirm != "" && confirm != confirmDelete {
			return "", hint.Wrap(fmt.Errorf("--confirm %s and --confirm-delete %s name different boxes; nothing was changed", confirm, confirmDelete),
				"pass --confirm %s (or --confirm-delete %s), not both", name, name)
		}
		flag, given = "--confirm-delete", confirmDelete
	}
	if given != "" && given != name {
		return "", hint.Wrap(fmt.Errorf("%s %s does not name the box to remove, %s; nothing was changed", flag, given, name), "pass %s %s", flag, name)
	}
	return given, nil
}

func newLsCommand(env *Env) *cobra.Command {
	var asJSON, all bool
	cmd := &cobra.Command{
		Use: "ls", Short: "List every box: host, state, image, executor URL, last backup",
		Long: `List every box of this fleet, declared or found on its hosts' engines: its
host, its state, whether its image is the locked one (current) or not
(stale), where a person on this machine reaches its executor, and its
newest backup in backups/ made since the box's data volume was created
(not one of an earlier box of that name).

The state is the agent container's, in Docker's words, with the
executor's added when it differs: "running (executor exited)" is a box
whose agent runs but whose executor does not, "running (no executor)" one
whose executor container is gone. A box found but not declared is marked
(undeclared); one made before fleets, (no fleet). --all lists the boxes of
every fleet on the engines, with a FLEET column. --json prints the rows as
an array.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return inWorkspace(env, func(ws *workspace.Workspace) error { return ls(cmd.Context(), env, ws, all, asJSON) })
		},
	}
	jsonFlag(cmd, &asJSON, "print JSON")
	cmd.Flags().BoolVar(&all, "all", false, "list the boxes of every fleet on the engines, and those of no fleet")
	return cmd
}

func ls(ctx context.Context, env *Env, ws *workspace.Workspace, all, asJSON bool) error {
	rows, err := ws.ObserveList(ctx, all)
	if err != nil {
		return err
	}
	return printed(env, asJSON, rows, func(w io.Writer) { rows.WriteText(w, all) })
}
