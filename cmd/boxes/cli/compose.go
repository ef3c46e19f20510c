package cli

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/compose"
)

// composeNoImage stands in for the image when boxes.lock has none yet.
const composeNoImage = "<no image locked: run boxes build>"

func newComposeCommand(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "compose NAME",
		Short: "Print a box's generated compose project as YAML (token redacted)",
		Args:  exactlyOne("compose", "box name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(env)
			if err != nil {
				return err
			}
			box, ok := cfg.Box(args[0])
			if !ok {
				var names []string
				for _, b := range cfg.Boxes {
					names = append(names, b.Name)
				}
				return withHint(fmt.Errorf("no box %q in %s", args[0], filepath.Base(env.File)), "declared boxes: %s", strings.Join(names, ", "))
			}
			lock, err := loadLock(env)
			if err != nil {
				return err
			}
			image := composeNoImage
			if lock != nil && lock.Image != nil {
				image = lock.Image.ID
			} else {
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
