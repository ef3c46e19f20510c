package cli

import (
	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/workspace"
)

func newDoctorCommand(env *Env) *cobra.Command {
	var asJSON bool
	var confine workspace.Confine
	cmd := &cobra.Command{
		Use:   "doctor NAME",
		Short: "Check a box from the host and from inside (hb doctor); exit 1 on a problem",
		Long: `Check box NAME from the host: both containers up (or stopped as declared),
the agent publishing no port, the executor's published port answering an
MCP initialize with the token (and refusing one without it), the containers
on the locked image; then from inside the box with hb doctor (the tools,
the /data layout, the MCP handshake with Executor). Each check prints ok,
warn or error with what to do; exit 1 when one is an error. --json prints
the checks. --lease and --no-pool confine it as they do exec.`,
		Args: exactlyOne("doctor", "box name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return inConfinedWorkspace(env, confine, func(ws *workspace.Workspace) error {
				rep, err := ws.ObserveDoctor(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if err := printed(env, asJSON, rep, rep.WriteText); err != nil || rep.OK {
					return err
				}
				return &ExitError{Code: 1}
			})
		},
	}
	jsonFlag(cmd, &asJSON, "print the checks as JSON")
	confineFlags(cmd, &confine)
	return cmd
}
