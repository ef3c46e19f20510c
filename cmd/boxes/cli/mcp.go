package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/mcpserver"
)

func newMCPCommand(env *Env) *cobra.Command {
	var allow []string
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve boxes to a coding agent on this machine over MCP (stdio)",
		Long: `Serve MCP on standard input and output, for a coding agent running on this machine.

Its tools read the fleet and work inside a box: list_boxes (boxes ls), plan
(boxes plan, shown, never applied), exec (a command in a box's agent container,
bounded in time and output), logs and doctor. Nothing that creates, changes or
deletes a box is offered, and exec reaches no pool's box.

--allow lease adds lease, renew and release (a box of a pool, for this session),
and read_file and write_file (under /data/home/agent of a box the session
holds); exec then reaches the pool boxes the session holds, and no other. When
the session ends (its input closes, or a signal comes) every box it still holds
is released: reset, and free for others.

Register it with an agent, for example:
  claude mcp add boxes -- boxes -f /path/to/boxes.yaml mcp
  claude mcp add boxes -- boxes -f /path/to/boxes.yaml mcp --allow lease`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var o mcpserver.Options
			for _, a := range allow {
				switch a {
				case "lease":
					o.AllowLease = true
				default:
					return hint.Wrap(fmt.Errorf("--allow %s: unknown", a), "--allow lease is the one there is")
				}
			}
			ctx := cmd.Context()
			s, end := mcpserver.NewWith(inProcess(env.connectors), env.File, versionString(), o)
			err := mcpserver.Serve(ctx, s, env.In, env.Out)
			// The session is over: what it holds goes back, even on a signal.
			if rerr := end(context.WithoutCancel(ctx)); rerr != nil {
				return errors.Join(err, rerr)
			}
			return err
		},
	}
	cmd.Flags().StringSliceVar(&allow, "allow", nil, "add tools that change boxes: lease (lease, renew, release and the file tools, for pool boxes)")
	return cmd
}

// inProcess runs one boxes command line in this process, with no standard
// input, reaching the hosts through c.
func inProcess(c Connectors) mcpserver.Runner {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		return MainWith(ctx, Streams{In: strings.NewReader(""), Out: stdout, Err: stderr}, args, c)
	}
}
