package workspace

import (
	"github.com/hermes-box/boxes/doctor"
	"github.com/hermes-box/boxes/reconcile"
)

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

// Removed is rm's result: box name deleted from host with its resources r;
// backup is its newest archive ("" when none), declared whether boxes.yaml
// still declares it.
func Removed(name, host string, r reconcile.Resources, backup string, declared bool) BoxResult {
	containers, networks, volumes := len(r.Containers), len(r.Networks), len(r.Volumes)
	return BoxResult{Box: name, Host: host, State: "removed", Containers: &containers, Networks: &networks, Volumes: &volumes, Backup: &backup, Declared: &declared}
}
