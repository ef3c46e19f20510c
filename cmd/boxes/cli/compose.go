package cli

import (
	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/workspace"
)

func newComposeCommand(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "compose NAME",
		Short: "Print a box's generated compose project as YAML (token redacted)",
		Long: `Print the compose project boxes makes for box NAME (hbl-NAME) as YAML: the
agent and executor services, their network and volumes, labels, limits and
the published executor port, exactly as apply hands them to Docker. The
token is redacted. Nothing is written and no engine is asked; without an
image in boxes.lock the image is a placeholder, with a warning.

  boxes compose alpha | less`,
		Args: exactlyOne("compose", "box name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return inWorkspace(env, func(ws *workspace.Workspace) error {
				out, placeholder, err := ws.ComposeYAML(args[0])
				if placeholder {
					env.Warnf("boxes.lock has no image; the project shows a placeholder: run boxes build")
				}
				if err != nil {
					return err
				}
				_, err = env.Out.Write(out)
				return err
			})
		},
	}
}
