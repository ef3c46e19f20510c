package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version is set at link time (-ldflags "-X …cli.Version=v1.2.3"); otherwise the module version.
var Version = ""

// versionInfo is what version prints; --json prints it as is.
type versionInfo struct {
	Version string            `json:"version"`
	Go      string            `json:"go"`
	OS      string            `json:"os"`
	Arch    string            `json:"arch"`
	VCS     map[string]string `json:"vcs"`
}

func newVersionCommand(env *Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version and build information",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := versionInfo{Version: versionString(), Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, VCS: map[string]string{}}
			var vcs []string
			if info, ok := debug.ReadBuildInfo(); ok {
				for _, s := range info.Settings {
					if s.Key == "vcs.revision" || s.Key == "vcs.time" || s.Key == "vcs.modified" {
						v.VCS[s.Key[len("vcs."):]] = s.Value
						vcs = append(vcs, fmt.Sprintf("%s: %s", s.Key, s.Value))
					}
				}
			}
			if asJSON {
				return printJSON(env, v)
			}
			fmt.Fprintf(env.Out, "boxes %s\n", v.Version)
			fmt.Fprintf(env.Out, "go: %s %s/%s\n", v.Go, v.OS, v.Arch)
			for _, line := range vcs {
				fmt.Fprintln(env.Out, line)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the version and build information as JSON")
	return cmd
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
