package cli

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/internal/text"
	"github.com/hermes-box/boxes/workspace"
)

// boxResult is what save, load, rm, stop and start print with --json.
type boxResult = workspace.BoxResult

var plural = text.Plural

func jsonFlag(cmd *cobra.Command, asJSON *bool) {
	cmd.Flags().BoolVar(asJSON, "json", false, "print the result as JSON on stdout")
}

// printed prints v as JSON when asJSON, else as text does.
func printed(env *Env, asJSON bool, v any, text func(io.Writer)) error {
	if asJSON {
		return printJSON(env, v)
	}
	text(env.Out)
	return nil
}
