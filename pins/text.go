package pins

import (
	"fmt"
	"io"
)

// WriteText writes one line per pin as boxes lock update prints them:
// "+" added, "~" changed, blank for a pin that is the newest.
func (u LockUpdate) WriteText(w io.Writer) {
	for _, c := range u.Changes {
		switch {
		case !c.Changed:
			fmt.Fprintf(w, "  %-9s %s (newest)\n", c.Pin, Short(c.New))
		case c.Old == "":
			fmt.Fprintf(w, "+ %-9s %s (%s)\n", c.Pin, Short(c.New), c.From)
		case c.Old == c.New:
			fmt.Fprintf(w, "~ %-9s %s, integrity changed (%s)\n", c.Pin, Short(c.New), c.From)
		default:
			fmt.Fprintf(w, "~ %-9s %s -> %s (%s)\n", c.Pin, Short(c.Old), Short(c.New), c.From)
		}
	}
}

// JSON is the update as lock update --json prints it: the changes, an
// empty list when there are none.
func (u LockUpdate) JSON() []Change {
	if u.Changes == nil {
		return []Change{}
	}
	return u.Changes
}

// Outcome is what the update did to the lock (named lock), for stderr after
// its changes.
func (u LockUpdate) Outcome(lock string) string {
	switch {
	case u.Complete:
		return "boxes.lock has every pin; nothing to resolve"
	case !u.Changed:
		return lock + ": every pin is the newest; nothing written"
	case !u.Written:
		return "dry run: nothing written"
	}
	return lock + ": pins written; boxes build makes the image from them"
}
