package cli

import (
	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/workspace"
)

func newDoctorCommand(env *Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor NAME",
		Short: "Check a box from the host and from inside (hb doctor); exit 1 on a problem",
		Args:  exactlyOne("doctor", "box name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return inWorkspace(env, func(ws *workspace.Workspace) error {
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
	return cmd
}
