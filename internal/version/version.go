// Package version is what a boxes binary knows of its own build.
package version

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// Info is the version and build information; version --json prints it.
type Info struct {
	Version string            `json:"version"`
	Go      string            `json:"go"`
	OS      string            `json:"os"`
	Arch    string            `json:"arch"`
	VCS     map[string]string `json:"vcs"`
	// Lines are the VCS settings as "vcs.KEY: VALUE", in the build's order.
	Lines []string `json:"-"`
}

// Of is the binary's build information; linked is the version set at link
// time, if any.
func Of(linked string) Info {
	v := Info{Version: String(linked), Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, VCS: map[string]string{}}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" || s.Key == "vcs.time" || s.Key == "vcs.modified" {
				v.VCS[s.Key[len("vcs."):]] = s.Value
				v.Lines = append(v.Lines, fmt.Sprintf("%s: %s", s.Key, s.Value))
			}
		}
	}
	return v
}

// String is boxes's version: linked when set, else the module's, else "(devel)".
func String(linked string) string {
	if linked != "" {
		return linked
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}

// WriteText writes the version and build information as boxes version prints them.
func (i Info) WriteText(w io.Writer) {
	fmt.Fprintf(w, "boxes %s\n", i.Version)
	fmt.Fprintf(w, "go: %s %s/%s\n", i.Go, i.OS, i.Arch)
	for _, line := range i.Lines {
		fmt.Fprintln(w, line)
	}
}
