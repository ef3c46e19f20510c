package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version is set at link time (-ldflags "-X …cli.Version=v1.2.3"); otherwise the module version.
var Version = ""

func newVersionCommand(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and build information",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info, ok := debug.ReadBuildInfo()
			fmt.Fprintf(env.Out, "boxes %s\n", versionString())
			fmt.Fprintf(env.Out, "go: %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
			if ok {
				for _, s := range info.Settings {
					if s.Key == "vcs.revision" || s.Key == "vcs.time" || s.Key == "vcs.modified" {
						fmt.Fprintf(env.Out, "%s: %s\n", s.Key, s.Value)
					}
				}
			}
			return nil
		},
	}
}

// versionString is boxes's version: set at link time, else the module's, else "(devel)".
func versionString() string {
	if Version != "" {
		return Version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}
