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

// resultJSON is the usage of --json where it prints a command's result.
const resultJSON = "print the result as JSON on stdout"

// jsonFlag adds --json: print, as JSON on stdout, what usage says instead of text.
func jsonFlag(cmd *cobra.Command, asJSON *bool, usage string) {
	cmd.Flags().BoolVar(asJSON, "json", false, usage)
}

// printed prints v as JSON when asJSON, else as text does.
func printed(env *Env, asJSON bool, v any, text func(io.Writer)) error {
	if asJSON {
		return printJSON(env, v)
	}
	text(env.Out)
	return nil
}
