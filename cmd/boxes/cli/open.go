package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/handoff"
	"github.com/hermes-box/boxes/workspace"
)

func newOpenCommand(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "open NAME",
		Short: "Open the box's Executor dashboard in the browser, signed in, without printing the token",
		Long: `Open the box's Executor dashboard in the browser, signed in with the box's
token, which is never printed. The browser is $` + handoff.EnvBrowser + ` (a command; the
URL is its last argument), else xdg-open, or open on macOS.

A box whose executor is bound to the loopback of a host reached over
ssh:// is opened through a local port forwarded over ssh (batch mode, as
boxes reaches the host); the forward stays open, for the dashboard to keep
working, until Ctrl-C. A box on a kubernetes: host is opened through a local
port forwarded to its executor's pod by the cluster's API server (as kubectl
port-forward does), open until Ctrl-C too.`,
		Args: exactlyOne("open", "box name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return inWorkspace(env, func(ws *workspace.Workspace) error { return openDashboard(cmd.Context(), env, ws, args[0]) })
		},
	}
}

// openDashboard hands the dashboard of box name to the browser and, when it goes
// through a forward, keeps the forward open until ctx ends.
func openDashboard(ctx context.Context, env *Env, ws *workspace.Workspace, name string) error {
	d, err := ws.OpenDashboard(ctx, name)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Browse(ctx, env.Err, openTimeout); err != nil {
		return err
	}
	d.WriteText(env.Out)
	return d.Wait(ctx)
}

// openTimeout is how long open waits for the browser to fetch its one-time address.
const openTimeout = 2 * time.Minute
