package gcstart

import (
	"math"
	"os"
	"runtime/debug"
	"testing"
)

// TestStartAndSettle: as the test binary starts (this package's init ran),
// the collector is off under StartLimit; Settle gives back the pace and
// the limit the environment set (the defaults when it set none), and a
// second Settle changes nothing.
func TestStartAndSettle(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT is set: the defaults this test expects are not in force")
	}
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Errorf("at start the collector's pace is %d, want -1 (off)", got)
	}
	if got := debug.SetMemoryLimit(-1); got != StartLimit {
		t.Errorf("at start the memory limit is %d, want %d", got, StartLimit)
	}
	Settle()
	if got := debug.SetGCPercent(-1); got != 100 {
		t.Errorf("settled, the pace is %d, want 100", got)
	}
	debug.SetGCPercent(100)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("settled, the memory limit is %d, want none (%d)", got, int64(math.MaxInt64))
	}
	debug.SetGCPercent(50)
	Settle()
	if got := debug.SetGCPercent(100); got != 50 {
		t.Errorf("a second Settle changed the pace to %d", got)
	}
}
