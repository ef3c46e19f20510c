package cli

import (
	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/docker"
)

// composeNoImage stands in for the image when boxes.lock has none yet.
const composeNoImage = "<no image locked: run boxes build>"

func newComposeCommand(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "compose NAME",
		Short: "Print a box's generated compose project as YAML (token redacted)",
		Args:  exactlyOne("compose", "box name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := openWorkspace(env, docker.Options{})
			if err != nil {
				return err
			}
			defer ws.Close()
			box, ok := ws.Config.Box(args[0])
			if !ok {
				return ws.Undeclared(args[0])
			}
			image := ws.Image()
			if image == "" {
				image = composeNoImage
				env.Warnf("boxes.lock has no image; the project shows a placeholder: run boxes build")
			}
			p, err := compose.Project(compose.Input{Box: box, Image: image, WorkDir: env.Dir(), ConfigFile: env.File})
			if err != nil {
				return err
			}
			out, err := compose.YAML(p)
			if err != nil {
				return err
			}
			_, err = env.Out.Write(out)
			return err
		},
	}
}
