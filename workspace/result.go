package workspace

import "github.com/hermes-box/boxes/doctor"

// BoxResult is what save, load, rm, stop and start print with --json
// (format_version 1): the box, where it is, and what the command did.
type BoxResult struct {
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
