package statedir

import (
	"errors"
	"fmt"
	"time"
)

// Restoring is the record of a restore that has not been checked yet:
// written before a seeded box is created, removed once its data has been
// checked against the archive's content hashes and it was resumed. While it
// exists the box is recreated and seeded again from Archive (or From).
type Restoring struct {
	Box  string `json:"box"`
	Host string `json:"host"`
	// Archive is the archive as the plan named it (a restore: path, or
	// the absolute path load was given).
	Archive string `json:"archive,omitempty"`
	// From is, for a fork, its from: (BOX or BOX@LABEL) instead.
	From  string    `json:"from,omitempty"`
	Since time.Time `json:"since"`
}

func (r Restoring) box() string { return r.Box }

// check: a restore is seeded from an archive or a box, never both.
func (r Restoring) check() error {
	switch {
	case r.Archive == "" && r.From == "":
		return errors.New("it names neither an archive nor a box to seed from")
	case r.Archive != "" && r.From != "":
		return errors.New("it names both an archive and a box to seed from")
	}
	return nil
}

// Restores is the store of restore records: .boxes/restores/BOX.json.
type Restores struct{ Dir string }

var restoreKind = kind{
	name: "restore record",
	ext:  ".json",
	stake: func(box string) string {
		return fmt.Sprintf("whether %s's restore (or fork) was finished and checked", box)
	},
	fix: func(box string) string {
		return fmt.Sprintf("if you know %[1]s's data is whole, remove the file; if not, boxes rm %[1]s removes the box and the file, "+
			"and boxes load ARCHIVE %[1]s (or boxes apply, when boxes.yaml seeds %[1]s) makes it again", box)
	},
}

func (s Restores) records() jsonStore[Restoring] {
	return jsonStore[Restoring]{store{dir: s.Dir, kind: restoreKind}}
}

// Begin records that r.Box is being restored, durably.
func (s Restores) Begin(r Restoring) error {
	if r.Since.IsZero() {
		r.Since = time.Now().UTC()
	}
	if err := s.records().put(r); err != nil {
		return fmt.Errorf("recording the restore of %s: %w", r.Box, err)
	}
	return nil
}

// Done removes box's record: its restore is complete and checked.
func (s Restores) Done(box string) error { return s.records().remove(box) }

// Get is box's record; ok is false when there is none.
func (s Restores) Get(box string) (Restoring, bool, error) { return s.records().get(box) }

// All are the records, by box name.
func (s Restores) All() (map[string]Restoring, error) { return s.records().all() }
