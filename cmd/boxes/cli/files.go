package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/workspace"
)

// shown is path relative to the working directory when it lies below it.
func shown(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	rel, err := filepath.Rel(wd, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return path
	}
	return rel
}

func newSchemaCommand(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of boxes.yaml",
		Long:  schemaHelp,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := env.Out.Write(spec.Schema())
			return err
		},
	}
}

func newInitCommand(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "init [DIR]",
		Short: "Write a starter boxes.yaml and .gitignore",
		Long: `Write a starter boxes.yaml in DIR (default the current directory), with a
fleet: named after the directory and a first line that names its schema,
the schema beside it as boxes.schema.json (for editors), and add .boxes/
and backups/ to DIR's .gitignore, keeping what it holds. An existing
boxes.yaml is never overwritten.

  boxes init infra/boxes
  boxes -f infra/boxes/boxes.yaml validate`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			return initDir(env, dir)
		},
	}
}

func initDir(env *Env, dir string) error {
	wrote, err := workspace.Init(dir)
	for _, f := range wrote {
		fmt.Fprintf(env.Out, "wrote %s\n", f)
	}
	return err
}
