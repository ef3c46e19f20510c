package cli

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
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
token, which is never printed. The browser is $BOXES_BROWSER (a command; the
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
			browser, err := browserCommand()
			if err != nil {
				return err
			}
			// The browser is given a one-time loopback address, never the
			// token: a command line is readable by every user of the machine.
			h, err := handoff.New(base + "/?token=" + url.QueryEscape(token))
			if err != nil {
				return err
			}
			defer h.Close()
			run := exec.Command(browser[0], append(browser[1:], h.URL)...)
			run.Stdin, run.Stdout, run.Stderr = nil, env.Err, env.Err
			if err := run.Run(); err != nil {
				return fmt.Errorf("%s: %w", browser[0], err)
			}
			if err := h.Wait(cmd.Context(), openTimeout); err != nil {
				return fmt.Errorf("box %s: %w within %s", name, err, openTimeout)
			}
			fmt.Fprintf(env.Out, "opened the dashboard of %s (%s/) with %s, signed in through a one-time local address; the token was not printed\n", name, base, browser[0])
			return nil
		},
	}
}

// openTimeout is how long open waits for the browser to fetch its one-time address.
const openTimeout = 2 * time.Minute

// browserCommand is $BOXES_BROWSER split into words, else the platform's opener.
func browserCommand() ([]string, error) {
	if b := strings.Fields(os.Getenv("BOXES_BROWSER")); len(b) > 0 {
		return b, nil
	}
	opener := "xdg-open"
	if runtime.GOOS == "darwin" {
		opener = "open"
	}
	if _, err := exec.LookPath(opener); err != nil {
		return nil, withHint(fmt.Errorf("no browser: %s is not installed and BOXES_BROWSER is not set", opener), "set BOXES_BROWSER to the browser's command, e.g. BOXES_BROWSER=firefox")
	}
	return []string{opener}, nil
}
