package reconcile

import (
	"fmt"

	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/statedir"
)

// FromText is a from: value as a plan says it: "snapshot L of box B", or
// "box B's /data (copied paused)".
func FromText(from string) string {
	box, label := spec.SplitFrom(from)
	if label != "" {
		return fmt.Sprintf("snapshot %s of box %s", label, box)
	}
	return fmt.Sprintf("box %s's /data (copied paused)", box)
}

// NoSourceError is a fork whose snapshot its host does not have.
type NoSourceError struct {
	From, Host string
	// Incomplete: the snapshot is there, but its making was cut short or
	// runs still.
	Incomplete bool
	// Fleet is the other fleet the snapshot is of, when it is not this one's.
	Fleet string
}

func (e *NoSourceError) Error() string {
	box, label := spec.SplitFrom(e.From)
	if e.Fleet != "" {
		return fmt.Sprintf("from: %s: snapshot %s of box %s on %s is fleet %s's, not this fleet's", e.From, label, box, HostLabel(e.Host), e.Fleet)
	}
	if e.Incomplete {
		return fmt.Sprintf("from: %s: snapshot %s of box %s on %s is incomplete, and cannot seed a box", e.From, label, box, HostLabel(e.Host))
	}
	return fmt.Sprintf("from: %s: %s has no snapshot %s of box %s", e.From, HostLabel(e.Host), label, box)
}

// Hint is where to look, and how to make one.
func (e *NoSourceError) Hint() string {
	box, label := spec.SplitFrom(e.From)
	if e.Fleet != "" {
		return "name a snapshot this fleet made: boxes snapshots " + box + " lists them"
	}
	return fmt.Sprintf("boxes snapshots %s lists its snapshots; boxes snapshot %s %s makes this one (snapshots never leave their engine)", box, box, label)
}

// forkSource checks that host has what from: copies. A snapshot must be
// there, whole, when the plan is made; a box copied as it is is declared on
// the same host (spec checks that), and apply seeds forks after every
// other box, so a box it creates first is there. An unobserved host is
// left to the plan's other checks.
func forkSource(in Input, host, from string) error {
	box, label := spec.SplitFrom(from)
	o := in.Observed[host]
	if label == "" || o == nil {
		return nil
	}
	for _, s := range o.SnapshotsOf(box) {
		if s.Label == label {
			if s.Fleet != in.Config.Fleet {
				return &NoSourceError{From: from, Host: host, Fleet: s.Fleet}
			}
			if s.Writing {
				return &NoSourceError{From: from, Host: host, Incomplete: true}
			}
			return nil
		}
	}
	return &NoSourceError{From: from, Host: host}
}

// seedFrom sets what bp is seeded from to what r records.
func seedFrom(r statedir.Restoring, bp *BoxPlan) {
	bp.Restore, bp.From = r.Archive, r.From
}

// seedAgain is the reason of a create or recreate that seeds again what r
// records was cut short.
func seedAgain(r statedir.Restoring) Reason {
	if r.From != "" {
		return Reason{Kind: "incomplete", Field: "from", New: r.From}
	}
	return Reason{Kind: "incomplete", New: r.Archive}
}
