package statedir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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

// Moves is the store of move records beside boxes.yaml.
type Moves struct{ Dir string }

// MovesBeside is the move store of the boxes.yaml at configPath.
func MovesBeside(configPath string) Moves {
	return Moves{Dir: Beside(configPath).Moves()}
}

func (m Moves) path(box string) string { return filepath.Join(m.Dir, box+".json") }

// Get returns box's record; ok is false when there is none.
func (m Moves) Get(box string) (MoveRecord, bool, error) {
	data, err := os.ReadFile(m.path(box))
	if errors.Is(err, fs.ErrNotExist) {
		return MoveRecord{}, false, nil
	}
	if err != nil {
		return MoveRecord{}, false, err
	}
	var r MoveRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return MoveRecord{}, false, fmt.Errorf("%s: %w", m.path(box), err)
	}
	return r, true, nil
}

// Put writes a record atomically.
func (m Moves) Put(r MoveRecord) error {
	if err := os.MkdirAll(m.Dir, 0o700); err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return writeRecord(m.Dir, m.path(r.Box), data)
}

// Remove forgets box's record; a missing one is no error.
func (m Moves) Remove(box string) error { return removeRecord(m.path(box)) }

// All reads every record. A record whose archive is missing is read as not
// saved, so that the move saves again rather than restore nothing.
func (m Moves) All() (map[string]MoveRecord, error) {
	entries, err := os.ReadDir(m.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]MoveRecord{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]MoveRecord{}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasPrefix(name, ".") {
			continue
		}
		r, found, err := m.Get(name)
		if err != nil {
			return nil, err
		}
		if !found {
			continue
		}
		if r.Saved {
			base := filepath.Dir(m.Dir) // .boxes
			if _, err := os.Stat(filepath.Join(filepath.Dir(base), r.Archive)); err != nil {
				r.Saved, r.Verified = false, false
			}
		}
		out[name] = r
	}
	return out, nil
}
