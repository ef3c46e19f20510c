package workspace

import (
	"fmt"
	"io"
	"strings"

	"github.com/hermes-box/boxes/doctor"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/text"
	"github.com/hermes-box/boxes/reconcile"
)

// ResultFormat is the format_version of BoxResult's JSON; bump it on any
// incompatible change.
const ResultFormat = 1

// BoxResult is what save, load, rm, stop and start print with --json
// (format_version ResultFormat): the box, where it is, and what the
// command did.
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
	// SnapshotsKept are the labels of the removed box's snapshots, which
	// rm leaves (boxes snapshot rm deletes them).
	SnapshotsKept []string `json:"snapshots_kept,omitempty"`
	// Still declared: the next apply creates the removed box again.
	Declared *bool `json:"declared,omitempty"`
	// NoFleet: the removed box was made before fleets existed and no
	// fleet declares it.
	NoFleet bool           `json:"no_fleet,omitempty"`
	Doctor  *doctor.Report `json:"doctor,omitempty"`
	// did is the sentence the text prints: "removed alpha".
	did string
}

// WriteText writes what the command did, as its text output says it.
func (r BoxResult) WriteText(w io.Writer) { fmt.Fprintln(w, r.did) }

// Changed is stop's or start's result: box name on host is now state,
// running or stopped.
func Changed(name, host, state string) BoxResult {
	did := map[string]string{"running": "started", "stopped": "stopped"}[state]
	return BoxResult{FormatVersion: ResultFormat, Box: name, Host: host, State: state, did: did + " " + name}
}

// Removed is rm's result: box name deleted from host with its resources r;
// backup is its newest archive ("" when none), declared whether boxes.yaml
// still declares it.
func Removed(name, host string, r engine.Resources, backup string, declared bool) BoxResult {
	containers, networks, volumes := len(r.Containers), len(r.Networks), len(r.Volumes)
	return BoxResult{FormatVersion: ResultFormat, Box: name, Host: host, State: "removed", Containers: &containers, Networks: &networks, Volumes: &volumes,
		Backup: &backup, Declared: &declared, did: "removed " + name}
}

// WriteDeleting writes what rm is about to delete, before it asks: r's
// resources and the backup left of them.
func (r BoxResult) WriteDeleting(w io.Writer) {
	fmt.Fprintf(w, "box %s: %s; backup: %s\n", r.Box, engine.Counted(*r.Containers, *r.Networks, *r.Volumes), reconcile.BackupText(*r.Backup))
	if r.NoFleet {
		fmt.Fprintf(w, "box %s belongs to no fleet: it was made before fleets existed and no boxes.yaml here declares it\n", r.Box)
	}
	if n := len(r.SnapshotsKept); n > 0 {
		fmt.Fprintf(w, "box %s's %s kept: %s (boxes snapshot rm %s LABEL deletes one)\n", r.Box,
			text.Plural(n, "snapshot is", "snapshots are"), strings.Join(r.SnapshotsKept, ", "), r.Box)
	}
}
