package reconcile

import (
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/spec"
)

// The imperative commands are one-box plans run by the same Applier as
// apply: one crash-safety story, one progress display, one error style.

// StartPlan starts box name's existing containers on host. image is the
// image they already run: a start changes nothing else.
func StartPlan(host, name, image string) *Plan {
	return &Plan{Image: image, Boxes: []BoxPlan{{Name: name, Host: host, Action: Start, State: spec.Running,
		Reasons: []Reason{{Kind: "state", New: string(spec.Running)}}}}}
}

// StopPlan stops box name's containers on host.
func StopPlan(host, name string) *Plan {
	return &Plan{Boxes: []BoxPlan{{Name: name, Host: host, Action: Stop, State: spec.Stopped,
		Reasons: []Reason{{Kind: "state", New: string(spec.Stopped)}}}}}
}

// DeletePlan deletes exactly r, box name's resources on host, as a plan's
// delete would; backup is the newest archive of the box, for the record.
func DeletePlan(host, name string, r engine.Resources, backup string) *Plan {
	bp := planDelete(Input{Backups: map[string]string{name: backup}}, host, name, r)
	return &Plan{Boxes: []BoxPlan{bp}}
}

// LoadPlan creates declared box b seeded from archive, with a fresh token,
// and leaves it running whatever its declared state, for doctor to check
// (load stops a box declared stopped after that).
func LoadPlan(b spec.Box, image, archive string) *Plan {
	return &Plan{Image: image, Boxes: []BoxPlan{{Name: b.Name, Host: b.Host, Action: Create, State: spec.Running, Restore: archive,
		Reasons: []Reason{{Kind: "new"}, {Kind: "restore", New: archive}}}}}
}

// ReloadPlan recreates declared box b, whose restore from archive was cut
// short, and seeds it again from that archive: load run again after a kill.
func ReloadPlan(b spec.Box, image, archive string) *Plan {
	return &Plan{Image: image, Boxes: []BoxPlan{{Name: b.Name, Host: b.Host, Action: Recreate, State: spec.Running, Restore: archive,
		Reasons: []Reason{{Kind: "incomplete", New: archive}}}}}
}
