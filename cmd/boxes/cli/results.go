package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/doctor"
)

// boxResult is what save, load, rm, stop and start print with --json
// (format_version 1): the box, where it is, and what the command did.
type boxResult struct {
	FormatVersion int    `json:"format_version"`
	Box           string `json:"box"`
	Host          string `json:"host"` // "" is the local engine
	// State is the box's state afterwards: running, stopped or removed;
	// empty for save.
	State string `json:"state,omitempty"`
	// Archive is the archive save wrote or load read.
	Archive      string `json:"archive,omitempty"`
	ArchiveBytes int64  `json:"archive_bytes,omitempty"`
	SHA256       string `json:"sha256,omitempty"`
	Verified     bool   `json:"verified,omitempty"`
	Files        *int   `json:"files,omitempty"`
	Dirs         *int   `json:"dirs,omitempty"`
	DataBytes    *int64 `json:"data_bytes,omitempty"`
	// What rm deleted, and the newest backup it found.
	Containers *int    `json:"containers,omitempty"`
	Networks   *int    `json:"networks,omitempty"`
	Volumes    *int    `json:"volumes,omitempty"`
	Backup     *string `json:"backup,omitempty"`
	// Still declared: the next apply creates the removed box again.
	Declared *bool          `json:"declared,omitempty"`
	Doctor   *doctor.Report `json:"doctor,omitempty"`
}

func jsonFlag(cmd *cobra.Command, asJSON *bool) {
	cmd.Flags().BoolVar(asJSON, "json", false, "print the result as JSON on stdout")
}

// done prints a command's result: r as JSON, else the sentence.
func done(env *Env, asJSON bool, r boxResult, format string, args ...any) error {
	if asJSON {
		r.FormatVersion = 1
		return printJSON(env, r)
	}
	fmt.Fprintf(env.Out, format+"\n", args...)
	return nil
}

// plural is "1 box", "2 boxes".
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
