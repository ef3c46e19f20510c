package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/image/build"
	"github.com/hermes-box/boxes/workspace"
)

const schemaHelp = `Print the JSON Schema of boxes.yaml, for editors that complete and check it.

boxes init writes it beside boxes.yaml as boxes.schema.json and names it in
boxes.yaml's first line, which yaml-language-server (VS Code's YAML extension,
Neovim's yamlls, Helix, Zed) reads:

  # yaml-language-server: $schema=./boxes.schema.json

Commit boxes.schema.json with boxes.yaml so that reviewers' editors have it
too. After upgrading boxes, refresh it (boxes validate warns when it differs):

  boxes schema > boxes.schema.json

For a boxes.yaml written before, add the line above at its top, or map the
schema to the file in the editor's settings ("yaml.schemas" in VS Code).`

func newValidateCommand(env *Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check boxes.yaml and boxes.lock, offline",
		Long: `Check boxes.yaml and boxes.lock, offline. Errors name file:line:col with a
hint and exit 1 (with --json they are also printed on stdout as JSON, each
with its file, line, col, message and hint); warnings (no lock, no image,
an image built from other inputs, a stale boxes.schema.json) go to stderr
and exit 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runValidate(env, asJSON)
		},
	}
	jsonFlag(cmd, &asJSON, "print the result as JSON; errors too, on stdout as JSON and on stderr as text, exit 1")
	return cmd
}

func runValidate(env *Env, asJSON bool) error {
	return inWorkspace(env, func(ws *workspace.Workspace) error { return validate(env, ws, asJSON) })
}

func validate(env *Env, ws *workspace.Workspace, asJSON bool) error {
	v, err := ws.Validate(build.CurrentInputs)
	if err != nil {
		return err
	}
	// The warnings go to stderr with the text only; --json carries them.
	if err := printed(env, asJSON, v, v.WriteText); err != nil || asJSON {
		return err
	}
	for i, w := range v.Warnings {
		env.Warnf("%s", w)
		fmt.Fprintf(env.Err, "boxes: hint: %s\n", v.Hints[i])
	}
	return nil
}
