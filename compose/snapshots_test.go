package compose

import (
	"testing"
	"time"
)

// A snapshot volume is read from its labels; a label that cannot be read
// leaves its field unknown.
func TestSnapshotOf(t *testing.T) {
	s := SnapshotOf("hbl-alpha_snap-x", "alpha", "x", map[string]string{"boxes.fleet": "team", "boxes.snapshot.created": "2026-01-02T15:04:05Z", "boxes.snapshot.size": "4096"}, true)
	if s.Volume != "hbl-alpha_snap-x" || s.Box != "alpha" || s.Label != "x" || s.Fleet != "team" || s.Size != 4096 || !s.Writing ||
		!s.Created.Equal(time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)) {
		t.Errorf("%+v", s)
	}
	s = SnapshotOf("v", "alpha", "x", map[string]string{"boxes.snapshot.size": "lots"}, false)
	if s.Size != -1 || !s.Created.IsZero() {
		t.Errorf("unreadable labels: %+v", s)
	}
}
