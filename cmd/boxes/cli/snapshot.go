package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/workspace"
)

func newSnapshotCommand(env *Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "snapshot NAME [LABEL]",
		Short: "Copy a box's /data to a snapshot volume on its own engine",
		Long: `Copy box NAME's /data, under the box's lock, to a new volume on the box's
own engine, hbl-NAME_snap-LABEL, with a short-lived helper container running
the box's image: owners, modes, times and links are kept. A running box is
paused while its /data is copied, as save pauses it, and unpaused
whatever happens. LABEL defaults to the UTC time, YYYYMMDD-HHMMSS; a label
is 1 to 63 characters of a-z, 0-9, '.', '_' and '-', and one the box has
already is refused. A snapshot never leaves the engine and is not
encrypted: boxes save makes archives that do.

  boxes snapshot alpha before-upgrade
  boxes revert alpha before-upgrade      # later, to go back`,
		Args: between(1, 2, "snapshot needs a box name and, optionally, a label: boxes snapshot NAME [LABEL]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			label := ""
			if len(args) == 2 {
				label = args[1]
			}
			return inWorkspace(env, func(ws *workspace.Workspace) error {
				return takeSnapshot(cmd.Context(), env, ws, args[0], label, asJSON)
			})
		},
	}
	jsonFlag(cmd, &asJSON, "print the snapshot as JSON on stdout")
	cmd.AddCommand(newSnapshotRmCommand(env))
	return cmd
}

func takeSnapshot(ctx context.Context, env *Env, ws *workspace.Workspace, name, label string, asJSON bool) error {
	row, err := ws.Snapshot(ctx, name, label, workspace.SnapshotOptions{
		Init: initWait(env, name),
		Step: func(msg string) { fmt.Fprintf(env.Err, "snapshot of %s: %s\n", name, msg) },
		Warn: env.Warnf,
	})
	if err != nil && ctx.Err() != nil {
		return interrupted(ctx, "snapshot of "+name, "no snapshot was made, and the box is resumed")
	}
	if err != nil {
		return err
	}
	return printed(env, asJSON, row, row.WriteText)
}

func newSnapshotsCommand(env *Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "snapshots [NAME]",
		Short: "List this fleet's snapshots, or box NAME's: box, host, label, created, size",
		Long: `List the snapshots of this fleet's boxes on every host's engine, or of box
NAME alone: its box, host, label, when it was made (UTC) and the size of
the /data it copies. A snapshot marked (incomplete) is being made, or its
making was cut short; revert refuses it. Snapshots outlive their box: rm
leaves them, and they are listed here until boxes snapshot rm deletes
them. --json prints the rows as an array.`,
		Args: between(0, 1, "snapshots takes at most one box name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return inWorkspace(env, func(ws *workspace.Workspace) error {
				return listSnapshots(cmd.Context(), env, ws, name, asJSON)
			})
		},
	}
	jsonFlag(cmd, &asJSON, "print JSON")
	return cmd
}

func listSnapshots(ctx context.Context, env *Env, ws *workspace.Workspace, name string, asJSON bool) error {
	rows, err := ws.ObserveSnapshots(ctx, name)
	if err != nil {
		return err
	}
	return printed(env, asJSON, rows, rows.WriteText)
}

func newSnapshotRmCommand(env *Env) *cobra.Command {
	var confirm string
	cmd := &cobra.Command{
		Use:   "rm NAME LABEL",
		Short: "Delete snapshot LABEL of box NAME",
		Long: `Delete snapshot LABEL of box NAME, under the box's lock: its volume, and
the helper container a snapshot cut short left writing it. It shows the
snapshot first, then asks for the box's name to be typed; --confirm NAME
confirms without a prompt, and without a terminal it is needed. The box
itself is not touched; it need not exist any more.`,
		Args: between(2, 2, "snapshot rm needs a box name and a label: boxes snapshot rm NAME LABEL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, label := args[0], args[1]
			if err := checkConfirm(name, confirm); err != nil {
				return err
			}
			return inWorkspace(env, func(ws *workspace.Workspace) error {
				return removeSnapshot(cmd.Context(), env, ws, name, label, confirm)
			})
		},
	}
	cmd.Flags().StringVar(&confirm, "confirm", "", "the box's name, to delete without a prompt")
	return cmd
}

func removeSnapshot(ctx context.Context, env *Env, ws *workspace.Workspace, name, label, confirm string) error {
	s, err := ws.LockedSnapshot(ctx, name, label, "boxes snapshot rm")
	if err != nil {
		return err
	}
	if err := ws.SeedsFrom(s); err != nil {
		return err
	}
	fmt.Fprintf(env.Out, "snapshot %s of box %s, made %s on %s: %s of /data, volume %s\n", s.Label, s.Box, s.When(), reconcile.HostLabel(s.Host), reconcile.HumanSize(s.SizeBytes), s.Volume)
	if err := confirmName(env, name, confirm, "Type the box's name to delete its snapshot "+label+": ",
		fmt.Errorf("snapshot rm deletes snapshot %s of %s and there is no terminal to confirm it; nothing was changed", label, name)); err != nil {
		return err
	}
	if err := ws.RemoveSnapshot(ctx, s); err != nil {
		return err
	}
	fmt.Fprintf(env.Out, "removed snapshot %s of %s\n", label, name)
	return nil
}

func newRevertCommand(env *Env) *cobra.Command {
	var confirm string
	cmd := &cobra.Command{
		Use:   "revert NAME LABEL",
		Short: "Replace a box's /data with one of its snapshots (typed confirmation)",
		Long: `Replace box NAME's /data with its snapshot LABEL, under the box's lock. It
first says what it does, then asks for the box's name to be typed;
--confirm NAME confirms without a prompt, and without a terminal it is
needed. What /data holds now is lost: boxes snapshot NAME first keeps it.

The box is stopped, then a helper container empties its /data volume and
copies the snapshot in (owners, modes, times and links kept), and a box
that was running is started again; it keeps its token. /data is written
only once the box is stopped. Should the copy fail, the box stays stopped,
its /data marked quiesced so that it does not run on part of the
snapshot, and the snapshot is untouched: run the revert again.`,
		Args: between(2, 2, "revert needs a box name and a snapshot label: boxes revert NAME LABEL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, label := args[0], args[1]
			if err := checkConfirm(name, confirm); err != nil {
				return err
			}
			return inWorkspace(env, func(ws *workspace.Workspace) error {
				return revert(cmd.Context(), env, ws, name, label, confirm)
			})
		},
	}
	cmd.Flags().StringVar(&confirm, "confirm", "", "the box's name, to revert without a prompt")
	return cmd
}

func revert(ctx context.Context, env *Env, ws *workspace.Workspace, name, label, confirm string) error {
	rv, err := ws.LockedReversion(ctx, name, label)
	if err != nil {
		return err
	}
	rv.WriteText(env.Out)
	if err := confirmName(env, name, confirm, "Type the box's name to revert it: ",
		fmt.Errorf("revert replaces %s's /data and there is no terminal to confirm it; nothing was changed", name)); err != nil {
		return err
	}
	err = ws.Revert(ctx, rv, applyOptions(ctx, env, env.Err, 1), func(msg string) { fmt.Fprintf(env.Err, "revert of %s: %s\n", name, msg) })
	var cut *workspace.RevertError
	if errors.As(err, &cut) && ctx.Err() != nil {
		return hint.Wrap(interrupted(ctx, "reverting "+name+" to snapshot "+label,
			"the box is stopped, and its /data may hold part of the snapshot, marked quiesced so that the box does not run on it; the snapshot is untouched"), "%s", cut.Hint())
	}
	if err != nil {
		return err
	}
	state := "stopped"
	if rv.Running {
		state = "running"
	}
	fmt.Fprintf(env.Out, "reverted %s to snapshot %s; it is %s\n", name, label, state)
	return nil
}
