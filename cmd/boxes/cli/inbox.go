package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/internal/terminal"
	"github.com/hermes-box/boxes/workspace"
)

func newExecCommand(env *Env) *cobra.Command {
	var user string
	var interactive, tty bool
	var confine workspace.Confine
	cmd := &cobra.Command{
		Use:   "exec NAME -- CMD [ARG…]",
		Short: "Run a command in a box's agent container; its exit code is boxes's",
		Long: `Run CMD with its arguments in box NAME's agent container, as user agent in
its home (-u root for system work), and exit with CMD's exit code. The
command gets no standard input unless -i, and no terminal unless -t. A box
just created is waited for until its hb init has finished. --lease ID runs
it only while the box's lease on its engine is ID; --no-pool refuses a box
that is or was a pool's (boxes mcp runs its commands so).

  boxes exec alpha -- git -C work status
  boxes exec -u root alpha -- apt-get install -y ripgrep
  boxes exec -it alpha -- bash`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 || cmd.ArgsLenAtDash() != 1 {
				return fmt.Errorf("exec needs a box name, then -- and the command: boxes exec NAME -- CMD [ARG…]")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if tty && !env.IsTTY {
				return hint.Wrap(fmt.Errorf("exec -t needs a terminal"), "leave out -t to run the command without one")
			}
			opts := engine.ExecOptions{Cmd: hb.InHome(args[1:]...), User: user, TTY: tty, Stdout: env.Out, Stderr: env.Err}
			if interactive {
				opts.Stdin = env.In
			}
			if tty {
				opts.Env = []string{"TERM=" + terminal.Name()}
			}
			return runInBox(cmd.Context(), env, confine, args[0], opts)
		},
	}
	cmd.Flags().StringVarP(&user, "user", "u", hb.AgentUser, "run as this user (root for system work)")
	confineFlags(cmd, &confine)
	cmd.Flags().BoolVarP(&interactive, "interactive", "i", false, "pass standard input to the command")
	cmd.Flags().BoolVarP(&tty, "tty", "t", false, "give the command a terminal")
	return cmd
}

func newEnterCommand(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "enter NAME",
		Short: "Attach to the box's tmux session main, as agent (detach with C-b d)",
		Long: `Attach this terminal to the tmux session main of box NAME, as user agent,
creating the session when there is none. Detach with C-b d: the session and
what runs in it go on. Needs a terminal; boxes exec runs a command without
one.`,
		Args: exactlyOne("enter", "box name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !env.IsTTY {
				return hint.Wrap(fmt.Errorf("enter needs a terminal"), "boxes exec %s -- CMD runs a command without one", args[0])
			}
			return runInBox(cmd.Context(), env, workspace.Confine{}, args[0], engine.ExecOptions{
				Cmd: hb.Attach(), User: hb.AgentUser, Env: []string{"TERM=" + terminal.Name()},
				TTY: true, Stdin: env.In, Stdout: env.Out, Stderr: env.Err,
			})
		},
	}
}

// runInBox runs opts in the running agent container of box name, if c
// lets it, and turns a non-zero exit into boxes's exit code.
func runInBox(ctx context.Context, env *Env, c workspace.Confine, name string, opts engine.ExecOptions) error {
	var raw func() func()
	if opts.TTY {
		raw = func() func() { return terminal.Raw(env.In) }
		opts.Started = func(resize func(h, w uint)) { terminal.FollowSize(ctx, env.Out, resize) }
	}
	return inConfinedWorkspace(env, c, func(ws *workspace.Workspace) error {
		code, err := ws.Exec(ctx, name, initWait(env, name), opts, raw)
		var replaced *workspace.ReplacedError
		switch {
		case errors.As(err, &replaced):
			return &ExitError{Code: code, Err: err}
		case err == nil && code != 0:
			return &ExitError{Code: code}
		}
		return err
	})
}

// InitTimeout bounds how long enter and exec wait for a new box's hb init.
var InitTimeout = 60 * time.Second

func newLogsCommand(env *Env) *cobra.Command {
	var o engine.LogOptions
	var confine workspace.Confine
	cmd := &cobra.Command{
		Use:   "logs NAME [agent|executor|gate]",
		Short: "Print a box container's logs (the agent's unless named)",
		Long: `Print the logs of one of box NAME's containers: the agent's, or the
executor's or the gate's when named. -f (--follow) keeps printing new lines until
interrupted, as docker logs -f does; -n N prints only the last N lines.
--lease and --no-pool confine it as they do exec.

  boxes logs alpha executor -f -n 50`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return fmt.Errorf("logs needs a box name and, optionally, agent, executor or gate")
			}
			if len(args) == 2 && !slices.Contains(compose.Services, args[1]) {
				return fmt.Errorf("logs: %q is not a service of a box; the services are agent, executor and gate", args[1])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			service := compose.AgentService
			if len(args) == 2 {
				service = args[1]
			}
			return inConfinedWorkspace(env, confine, func(ws *workspace.Workspace) error {
				return ws.Logs(cmd.Context(), args[0], service, o, env.Out, env.Err)
			})
		},
	}
	// -f after logs means --follow, as in docker logs (see terraformFlags);
	// the file is then --file.
	cmd.Flags().BoolVar(&o.Follow, "follow", false, "keep printing new lines until interrupted (-f)")
	cmd.Flags().StringVarP(&o.Tail, "tail", "n", "all", "print only the last N lines")
	cmd.Flags().BoolVar(&o.Timestamps, "timestamps", false, "prefix each line with its time")
	confineFlags(cmd, &confine)
	return cmd
}
