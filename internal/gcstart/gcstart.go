// Package gcstart keeps the garbage collector from running while boxes
// starts: the packages boxes imports allocate about 3 MB as they
// initialise, past the collector's first goal (4 MB), so a plain start ran
// two collections before main and a short command (a lease) a third,
// milliseconds each on two cores. Its init runs before theirs (packages
// are initialised in the order of their import paths once their own
// imports are: this one needs only the runtime's), and turns the pace off
// under a memory limit of StartLimit, which still collects a start that
// grows that large. Settle, which main calls once a command has run for
// StartFor, restores the pace and the limit as they were (GOGC and
// GOMEMLIMIT from the environment included), so a long-running command
// (the gate, apply) collects as any Go program does.
package gcstart

import (
	"runtime/debug"
	"sync"
	"time"
)

const (
	// StartLimit is the heap a start may reach before it is collected.
	StartLimit = 256 << 20
	// StartFor is how long the collector stays off.
	StartFor = 500 * time.Millisecond
)

var (
	started     bool
	pace, limit int
	once        sync.Once
)

func init() {
	// A memory limit already lower (GOMEMLIMIT) is kept as it is.
	current := debug.SetMemoryLimit(-1)
	if current < StartLimit {
		return
	}
	limit = int(current)
	pace = debug.SetGCPercent(-1)
	debug.SetMemoryLimit(StartLimit)
	started = true
}

// Settle restores the collector's pace and memory limit as they were
// before init (GOGC=off stays off); more calls do nothing.
func Settle() {
	once.Do(func() {
		if started {
			debug.SetGCPercent(pace)
			debug.SetMemoryLimit(int64(limit))
		}
	})
}
