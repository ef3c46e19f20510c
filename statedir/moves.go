package statedir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// MoveRecord is a move's own state on this machine, written before each
// step so that a move cut short resumes: .boxes/moves/NAME.json.
type MoveRecord struct {
	Box  string `json:"box"`
	From string `json:"from"`
	To   string `json:"to"`
	// Archive is where the box is saved, relative to boxes.yaml's directory.
	Archive string `json:"archive"`
	// Key is the age identity the archive is encrypted to (relative, 0600).
	Key string `json:"key"`
	// Saved: the archive is published and was read back whole.
	Saved bool `json:"saved"`
	// Bytes is the size of the saved data.
	Bytes int64 `json:"bytes,omitempty"`
	// Verified: the new copy holds exactly the archive's data and passed doctor.
	Verified bool      `json:"verified"`
	Started  time.Time `json:"started"`
}

func (r MoveRecord) box() string { return r.Box }

// check: a move goes from one host to another.
func (r MoveRecord) check() error {
	if r.From == r.To {
		return errors.New("it moves the box from a host to the same host")
	}
	return nil
}

// Moves is the store of move records: .boxes/moves/BOX.json.
type Moves struct{ Dir string }

var moveKind = kind{
	name: "move record",
	ext:  ".json",
	stake: func(box string) string {
		return fmt.Sprintf("how far %s's move got", box)
	},
	fix: func(box string) string {
		return fmt.Sprintf("remove the file: boxes plan then moves %s again from the copies it finds, and asks which to keep if there are two", box)
	},
}

func (m Moves) records() jsonStore[MoveRecord] {
	return jsonStore[MoveRecord]{store{dir: m.Dir, kind: moveKind}}
}

// Get is box's record; ok is false when there is none.
func (m Moves) Get(box string) (MoveRecord, bool, error) { return m.records().get(box) }

// Put writes r as its box's record, atomically and durably.
func (m Moves) Put(r MoveRecord) error { return m.records().put(r) }

// Remove forgets box's record; a missing one is no error.
func (m Moves) Remove(box string) error { return m.records().remove(box) }

// All are the records, by box name. A record whose archive is missing is
// read as not saved, so that the move saves again rather than restore
// nothing.
func (m Moves) All() (map[string]MoveRecord, error) {
	out, err := m.records().all()
	if err != nil {
		return nil, err
	}
	base := filepath.Dir(filepath.Dir(m.Dir)) // boxes.yaml's directory
	for box, r := range out {
		if r.Saved {
			if _, err := os.Stat(filepath.Join(base, r.Archive)); err != nil {
				r.Saved, r.Verified = false, false
				out[box] = r
			}
		}
	}
	return out, nil
}
