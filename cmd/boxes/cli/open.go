package cli

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/handoff"
	"github.com/hermes-box/boxes/reconcile"
)

func newOpenCommand(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "open NAME",
		Short: "Open the box's Executor dashboard in the browser, signed in, without printing the token",
		Long: `Open the box's Executor dashboard in the browser, signed in with the box's
token, which is never printed. The browser is $` + handoff.EnvBrowser + ` (a command; the
URL is its last argument), else xdg-open, or open on macOS.`,
		Args: exactlyOne("open", "box name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			ws, e, c, err := boxContainer(cmd.Context(), env, name, compose.ExecutorService, true, "")
			if err != nil {
				return err
			}
			defer ws.Close()
			port, ok := c.Published(compose.ExecutorPort)
			if !ok {
				return withHint(fmt.Errorf("box %s: the executor publishes no port", name), "boxes doctor %s", name)
			}
			base := reconcile.ExecutorURL(port.HostIP, port.HostPort)
			if e.Host != "" {
				env.Warnf("box %s is on host %s; its dashboard address is that host's %s", name, e.Host, base)
			}
			token, ok, err := ws.Tokens.Get(name)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("box %s: %w", name, reconcile.ErrNoToken)
			}
			browser, err := handoff.Browser()
			if err != nil {
				return err
			}
			err = handoff.Open(cmd.Context(), base+"/?token="+url.QueryEscape(token), browser, env.Err, openTimeout)
			if errors.Is(err, handoff.ErrNotFetched) {
				return fmt.Errorf("box %s: %w within %s", name, err, openTimeout)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Out, "opened the dashboard of %s (%s/) with %s, signed in through a one-time local address; the token was not printed\n", name, base, browser[0])
			return nil
		},
	}
}

// openTimeout is how long open waits for the browser to fetch its one-time address.
const openTimeout = 2 * time.Minute
