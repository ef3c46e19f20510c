package compose

import (
	"strconv"
	"time"

	"github.com/hermes-box/boxes/engine"
)

// SnapshotOf reads snapshot volume name of box, labelled label, from its
// labels, on any engine: a volume's on Docker, a volume claim's on a
// cluster. writing is whether a one-off is left writing it.
func SnapshotOf(name, box, label string, labels map[string]string, writing bool) engine.Snapshot {
	created, _ := time.Parse(time.RFC3339, labels[SnapshotCreatedLabel])
	size, err := strconv.ParseInt(labels[SnapshotSizeLabel], 10, 64)
	if err != nil || size < 0 {
		size = -1
	}
	return engine.Snapshot{Volume: name, Box: box, Label: label, Fleet: labels[FleetLabel], Created: created, Size: size, Writing: writing}
}
