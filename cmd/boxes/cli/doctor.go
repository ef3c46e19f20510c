package cli

import (
	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/docker"
)

func newDoctorCommand(env *Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor NAME",
		Short: "Check a box from the host and from inside (hb doctor); exit 1 on a problem",
		Args:  exactlyOne("doctor", "box name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := openWorkspace(env, docker.Options{})
			if err != nil {
				return err
			}
			defer ws.Close()
			if _, _, err := ws.ObserveBox(cmd.Context(), args[0]); err != nil {
				return err
			}
			rep, err := ws.Doctor(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				if err := printJSON(env, rep); err != nil {
					return err
				}
			} else {
				rep.WriteText(env.Out)
			}
			if !rep.OK {
				return &ExitError{Code: 1}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the checks as JSON")
	return cmd
}
