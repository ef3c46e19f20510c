package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/pool"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/workspace"
)

// leaseOptions are how the lease commands report resets and apply.
func leaseOptions(ctx context.Context, env *Env) workspace.LeaseOptions {
	return workspace.LeaseOptions{
		LeaseOptions: pool.LeaseOptions{Step: func(msg string) { fmt.Fprintln(env.Err, msg) }},
		Apply:        applyOptions(ctx, env, env.Err, 1),
	}
}

func defaultHolder() string {
	user := os.Getenv("USER")
	host, _ := os.Hostname()
	if user == "" {
		user = "someone"
	}
	return user + "@" + host
}

func newLeaseCommand(env *Env) *cobra.Command {
	var (
		asJSON bool
		o      workspace.LeaseOptions
	)
	cmd := &cobra.Command{
		Use:   "lease POOL",
		Short: "Claim a free box of a pool, for one holder, for a time",
		Long: `Claim one free, running box of pool POOL (under pools: in boxes.yaml) for
--holder until --ttl from now, and print its name, executor URL, holder and
expiry; its token is stored in .boxes/secrets/BOX.env as apply stores it.

The claim is made on the box's engine (a marker container only one caller
can create), so two machines or many processes leasing from one engine
never get the same box. With no free box, expired leases of the pool are
reset first; then lease waits up to --wait for a box to come free, or fails
at once naming the pool's counts. boxes renew extends a lease, boxes
release ends it; an expired lease is reset by boxes leases --reap, by the
next apply, or by a lease that needs its box.

  boxes lease scratch --holder ci-42 --ttl 1h
  boxes lease scratch --json | jq -r .box`,
		Args: between(1, 1, "lease needs a pool name: boxes lease POOL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return inWorkspace(env, func(ws *workspace.Workspace) error {
				opts := leaseOptions(ctx, env)
				opts.Holder, opts.TTL, opts.Wait = o.Holder, o.TTL, o.Wait
				row, err := ws.Lease(ctx, args[0], opts)
				if err != nil {
					return err
				}
				return printed(env, asJSON, row, row.WriteText)
			})
		},
	}
	cmd.Flags().StringVar(&o.Holder, "holder", defaultHolder(), "who holds the lease, for boxes leases")
	cmd.Flags().DurationVar(&o.TTL, "ttl", pool.DefaultTTL, "how long the lease lasts (1m to 8h)")
	cmd.Flags().DurationVar(&o.Wait, "wait", 0, "how long to wait for a free box (0: fail at once)")
	jsonFlag(cmd, &asJSON, "print the lease as JSON on stdout")
	return cmd
}

func newRenewCommand(env *Env) *cobra.Command {
	var (
		asJSON bool
		ttl    = pool.DefaultTTL
		lease  string
	)
	cmd := &cobra.Command{
		Use:   "renew BOX",
		Short: "Extend the lease of a pool's box to --ttl from now",
		Long: `Extend the lease of pool box BOX to --ttl from now: a lease ends at the
latest of its claim's and renewals' ends, so a renew never shortens it. An
expired lease is not renewed: its box is the reaper's, and boxes lease
claims a fresh one. --lease ID (lease --json's "lease") refuses to renew
another holder's lease of the same box, should yours have ended.`,
		Args: between(1, 1, "renew needs a box name: boxes renew BOX"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return inWorkspace(env, func(ws *workspace.Workspace) error {
				opts := leaseOptions(ctx, env)
				opts.TTL, opts.Lease = ttl, lease
				row, err := ws.Renew(ctx, args[0], opts)
				if err != nil {
					return err
				}
				return printed(env, asJSON, row, row.WriteText)
			})
		},
	}
	cmd.Flags().DurationVar(&ttl, "ttl", pool.DefaultTTL, "how long from now the lease lasts (1m to 8h)")
	cmd.Flags().StringVar(&lease, "lease", "", "the lease's ID (lease --json's \"lease\"): refuse if the box's lease is another")
	jsonFlag(cmd, &asJSON, "print the lease as JSON on stdout")
	return cmd
}

func newReleaseCommand(env *Env) *cobra.Command {
	var lease string
	cmd := &cobra.Command{
		Use:   "release BOX",
		Short: "End the lease of a pool's box: it is reset, and the pool made whole",
		Long: `End the lease of pool box BOX and reset it: the box is deleted with its
/data and its token (the holder's copy stops working at once, and no file
or process of the holder is left), and the pool's free boxes are made
again as apply makes them. It returns once that is done. A release cut
short leaves the box marked as being reset; boxes leases --reap finishes it.
--lease ID (lease --json's "lease") refuses to release another holder's
lease of the same box, should yours have ended: scripts should pass it.`,
		Args: between(1, 1, "release needs a box name: boxes release BOX"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return inWorkspace(env, func(ws *workspace.Workspace) error {
				opts := leaseOptions(ctx, env)
				opts.Lease = lease
				if err := ws.Release(ctx, args[0], opts); err != nil {
					return err
				}
				fmt.Fprintf(env.Out, "released %s: it is reset\n", args[0])
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&lease, "lease", "", "the lease's ID (lease --json's \"lease\"): refuse if the box's lease is another")
	return cmd
}

// leaseRows are the rows boxes leases prints.
type leaseRows []pool.LeaseRow

func (rs leaseRows) WriteText(w io.Writer) {
	if len(rs) == 0 {
		fmt.Fprintln(w, "No pools: declare one under pools: in boxes.yaml.")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BOX\tPOOL\tHOST\tSTATE\tHOLDER\tEXPIRES")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Box, r.Pool, reconcile.HostName(r.Host), r.State, dash(r.Holder), dash(r.Expires))
	}
	tw.Flush()
}

func newLeasesCommand(env *Env) *cobra.Command {
	var asJSON, reap bool
	cmd := &cobra.Command{
		Use:   "leases",
		Short: "List the pools' boxes and their leases; --reap resets the expired",
		Long: `List every pool's boxes with their state (free, leased, expired, resetting;
absent until apply makes it, not running when stopped), holder and expiry,
and every other pool box the engines hold: a leased box of a pool taken out
of boxes.yaml, and "to delete" for a free box the next apply deletes once
its delete is confirmed (beyond a smaller size, or of a pool taken out or
moved). --reap first resets the boxes whose lease has expired, and
finishes the resets that were cut short. --json prints an
array of objects with box, pool, host, state, holder, lease and expires
(RFC 3339; holder and expires are empty for a free box).`,
		Args: between(0, 0, "leases takes no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			return inWorkspace(env, func(ws *workspace.Workspace) error {
				rows, err := ws.Leases(ctx, reap, leaseOptions(ctx, env))
				if err != nil {
					return err
				}
				return printed(env, asJSON, leaseRows(rows), leaseRows(rows).WriteText)
			})
		},
	}
	cmd.Flags().BoolVar(&reap, "reap", false, "reset the boxes whose lease expired first")
	jsonFlag(cmd, &asJSON, "print JSON")
	return cmd
}

// dash is s, or "-" for nothing.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
