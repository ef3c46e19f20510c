package cli

import (
	"context"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/mcpserver"
)

func newMCPCommand(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve boxes to a coding agent on this machine over MCP (stdio)",
		Long: `Serve MCP on standard input and output, for a coding agent running on this machine.

Its tools read the fleet and work inside a box: list_boxes (boxes ls), plan
(boxes plan, shown, never applied), exec (a command in a box's agent container),
logs and doctor. Nothing that creates, changes or deletes a box is offered.

Register it with an agent, for example:
  claude mcp add boxes -- boxes -f /path/to/boxes.yaml mcp`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return mcpserver.Serve(cmd.Context(), mcpserver.New(inProcess, env.File, versionString()), env.In, env.Out)
		},
	}
}

// inProcess runs one boxes command line in this process, with no standard input.
func inProcess(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return MainContext(ctx, Streams{In: strings.NewReader(""), Out: stdout, Err: stderr}, args)
}
