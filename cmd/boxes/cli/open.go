package cli

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/handoff"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/reconcile"
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
working, until Ctrl-C.`,
		Args: exactlyOne("open", "box name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			var forward *docker.Forward
			ws, e, c, err := boxContainer(cmd.Context(), env, name, compose.ExecutorService, true, "")
			if err != nil {
				return err
			}
			defer ws.Close()
			port, ok := c.Published(compose.ExecutorPort)
			if !ok {
				return hint.Wrap(fmt.Errorf("box %s: the executor publishes no port", name), "boxes doctor %s", name)
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
			reach := e.Reach(port.HostIP, port.HostPort)
			base, via := reach.URL, ""
			switch reach.How {
			case docker.ReachSSHForward:
				fwd, err := e.Forward(cmd.Context(), port.HostIP, port.HostPort)
				if err != nil {
					return fmt.Errorf("box %s: forwarding a local port to its executor (%s): %w", name, reach.OnHost, err)
				}
				defer fwd.Close()
				forward = fwd
				base, via = fwd.URL, fmt.Sprintf(", forwarded over ssh to %s on host %s", reach.OnHost, e.Host)
			case docker.ReachHostOnly:
				return hint.Wrap(fmt.Errorf("box %s: its executor is on host %s's loopback (%s), which only that machine reaches", name, e.Host, reach.OnHost),
					"bind it where this machine reaches it (executor: {bind: 0.0.0.0}), or reach host %s over ssh://, which open forwards a port over", e.Host)
			}
			err = handoff.Open(cmd.Context(), base+"/?token="+url.QueryEscape(token), browser, env.Err, openTimeout)
			if errors.Is(err, handoff.ErrNotFetched) {
				return fmt.Errorf("box %s: %w within %s", name, err, openTimeout)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Out, "opened the dashboard of %s (%s/%s) with %s, signed in through a one-time local address; the token was not printed\n", name, base, via, browser[0])
			if forward == nil {
				return nil
			}
			// The dashboard keeps talking to the executor: the forward
			// stays for as long as the page is used.
			fmt.Fprintln(env.Out, "the forward stays open until Ctrl-C")
			select {
			case <-cmd.Context().Done():
				return nil
			case <-forward.Done():
				return fmt.Errorf("box %s: the ssh forward ended: %w", name, forward.Err())
			}
		},
	}
}

// openTimeout is how long open waits for the browser to fetch its one-time address.
const openTimeout = 2 * time.Minute
