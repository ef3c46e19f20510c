package docker

import (
	"testing"
	"time"
)

func TestExitCode(t *testing.T) {
	for status, want := range map[string]int{
		"Restarting (127) 3 seconds ago":        127,
		"Exited (0) 2 minutes ago":              0,
		"Exited (137) About an hour ago":        137,
		"Up 5 minutes (healthy)":                0,
		"Up 2 seconds (Paused)":                 0,
		"Created":                               0,
		"Exited (-1) Less than a second ago":    -1,
		"Restarting (1) Less than a second ago": 1,
	} {
		if got := exitCode(status); got != want {
			t.Errorf("exitCode(%q) = %d, want %d", status, got, want)
		}
	}
}

func TestUpSeconds(t *testing.T) {
	for status, want := range map[string]time.Duration{
		"Up Less than a second":                   0,
		"Up 1 second":                             time.Second,
		"Up 9 seconds (health: starting)":         9 * time.Second,
		"Up 2 minutes (healthy)":                  time.Hour,
		"Restarting (127) Less than a second ago": time.Hour,
	} {
		if got := upSeconds(status); got != want {
			t.Errorf("upSeconds(%q) = %v, want %v", status, got, want)
		}
	}
}

func TestParallelCalls(t *testing.T) {
	for url, want := range map[string]int{
		"ssh://me@nexus":              1, // each new connection is an ssh session
		"tcp://10.0.0.5:2376":         -1,
		"unix:///var/run/docker.sock": -1,
	} {
		e := &Engine{Endpoint: Endpoint{URL: url}}
		if got := e.parallelCalls(); got != want {
			t.Errorf("%s: %d calls at once, want %d", url, got, want)
		}
	}
}

// A snapshot volume is read from its labels; a label that cannot be read
// leaves its field unknown.
func TestSnapshotOf(t *testing.T) {
	s := snapshotOf("hbl-alpha_snap-x", "alpha", "x", map[string]string{"boxes.fleet": "team", "boxes.snapshot.created": "2026-01-02T15:04:05Z", "boxes.snapshot.size": "4096"}, true)
	if s.Volume != "hbl-alpha_snap-x" || s.Box != "alpha" || s.Label != "x" || s.Fleet != "team" || s.Size != 4096 || !s.Writing ||
		!s.Created.Equal(time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)) {
		t.Errorf("%+v", s)
	}
	s = snapshotOf("v", "alpha", "x", map[string]string{"boxes.snapshot.size": "lots"}, false)
	if s.Size != -1 || !s.Created.IsZero() {
		t.Errorf("unreadable labels: %+v", s)
	}
}
