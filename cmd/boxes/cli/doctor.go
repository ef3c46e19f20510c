package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/doctor"
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
				printDoctor(env, rep)
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

func printDoctor(env *Env, rep *doctor.Report) {
	for _, c := range rep.Checks {
		label := map[string]string{"ok": "ok", "warn": "warn"}[c.Severity]
		if label == "" {
			label = "FAIL"
		}
		fmt.Fprintf(env.Out, "%-4s  %-4s  %-26s %s\n", label, c.Where, c.Name, c.Detail)
	}
	if rep.OK {
		fmt.Fprintf(env.Out, "box %s is healthy\n", rep.Box)
	} else {
		fmt.Fprintf(env.Out, "box %s has problems (FAIL lines above)\n", rep.Box)
	}
}
