package cli

import (
	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/internal/version"
)

// Version is set at link time (-ldflags "-X …cli.Version=v1.2.3"); otherwise the module version.
var Version = ""

func newVersionCommand(env *Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version and build information",
		Long: `Print boxes's version, the Go version and platform it was built for, and the
build's information (source revision and time, when the build recorded
them). --json prints the same as an object, for bug reports and scripts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := version.Of(Version)
			return printed(env, asJSON, v, v.WriteText)
		},
	}
	jsonFlag(cmd, &asJSON, "print the version and build information as JSON")
	return cmd
}

// versionString is boxes's version: set at link time, else the module's, else "(devel)".
func versionString() string { return version.String(Version) }
