package statedir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Records of work on a box that a kill may cut short, kept beside
// boxes.yaml under .boxes/ so that the next plan sees what is left and the
// next command finishes or undoes it: a save that froze the box
// (.boxes/frozen/NAME.json), a restore not yet checked (.boxes/restores/NAME.json).

// Freeze is the record of a save that quiesces and pauses a box. The save
// holds a lock on the file while it runs; a record whose lock is free is
// left by a save that died, and its box may still be frozen.
type Freeze struct {
	Box  string `json:"box"`
	Host string `json:"host"`
	// Container is the agent container the save froze.
	Container string    `json:"container"`
	PID       int       `json:"pid"`
	Since     time.Time `json:"since"`
}

func frozenDir(configPath string) string {
	return Beside(configPath).Frozen()
}

// HeldFreeze is a freeze record its writer holds.
type HeldFreeze struct {
	f    *os.File
	path string
}

// HoldFreeze writes the freeze record of r.Box and holds it until Release or
// Keep. The record appears under its name already locked, so that nobody
// takes it for a dead save's.
func HoldFreeze(configPath string, r Freeze) (*HeldFreeze, error) {
	dir := frozenDir(configPath)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if r.PID == 0 {
		r.PID = os.Getpid()
	}
	if r.Since.IsZero() {
		r.Since = time.Now().UTC()
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, ".new-*")
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*HeldFreeze, error) {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fail(err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		return fail(err)
	}
	path := filepath.Join(dir, r.Box+".json")
	if err := os.Rename(f.Name(), path); err != nil {
		return fail(err)
	}
	return &HeldFreeze{f: f, path: path}, nil
}

// Release removes the record: the box is thawed.
func (h *HeldFreeze) Release() error {
	if h == nil || h.f == nil {
		return nil
	}
	err := os.Remove(h.path)
	h.f.Close()
	h.f = nil
	return err
}

// Keep lets go of the record without removing it: the box could not be
// thawed, and the next command that touches it, or apply, will.
func (h *HeldFreeze) Keep() {
	if h == nil || h.f == nil {
		return
	}
	h.f.Close()
	h.f = nil
}

// StaleFreezes are the freeze records of saves that are no longer running,
// by box name.
func StaleFreezes(configPath string) map[string]Freeze {
	out := map[string]Freeze{}
	dir := frozenDir(configPath)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return out
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") {
			continue
		}
		r, held, err := readFreeze(filepath.Join(dir, name))
		if err != nil || held {
			continue
		}
		out[r.Box] = r
	}
	return out
}

// readFreeze reads a freeze record and whether its writer still holds it.
func readFreeze(path string) (Freeze, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return Freeze{}, false, err
	}
	defer f.Close()
	var r Freeze
	if err := json.NewDecoder(f).Decode(&r); err != nil {
		return Freeze{}, false, fmt.Errorf("%s: %w", path, err)
	}
	// A shared lock is refused while the writer holds its exclusive one.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return r, true, nil
		}
		return Freeze{}, false, err
	}
	return r, false, nil
}

// TakeStaleFreeze takes over box's freeze record if the save that wrote it
// is gone: the caller thaws the box, then Releases it (or Keeps it when
// the thaw failed). It returns nil when there is no such record.
func TakeStaleFreeze(configPath, box string) (*HeldFreeze, Freeze, error) {
	path := filepath.Join(frozenDir(configPath), box+".json")
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Freeze{}, nil
	}
	if err != nil {
		return nil, Freeze{}, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, Freeze{}, nil // a save runs
		}
		return nil, Freeze{}, err
	}
	var r Freeze
	if err := json.NewDecoder(f).Decode(&r); err != nil {
		r = Freeze{Box: box}
	}
	// The record may have been replaced by a newer save's since it was opened.
	if fi, err := os.Stat(path); err != nil || !sameFile(f, fi) {
		f.Close()
		return nil, Freeze{}, nil
	}
	return &HeldFreeze{f: f, path: path}, r, nil
}

func sameFile(f *os.File, fi fs.FileInfo) bool {
	own, err := f.Stat()
	return err == nil && os.SameFile(own, fi)
}

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

// Restores is the store of restore records beside a boxes.yaml.
type Restores struct{ Dir string }

// RestoresBeside is the restore store of the boxes.yaml at configPath.
func RestoresBeside(configPath string) Restores {
	return Restores{Dir: Beside(configPath).Restores()}
}

func (s Restores) path(box string) string { return filepath.Join(s.Dir, box+".json") }

// Begin records that box is being restored from archive, durably.
func (s Restores) Begin(r Restoring) error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	if r.Since.IsZero() {
		r.Since = time.Now().UTC()
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := writeRecord(s.Dir, s.path(r.Box), b); err != nil {
		return fmt.Errorf("recording the restore of %s: %w", r.Box, err)
	}
	return nil
}

// Done removes box's record: its restore is complete and checked.
func (s Restores) Done(box string) error { return removeRecord(s.path(box)) }

// writeRecord writes data to path, a record in dir, durably and atomically:
// a temporary file in dir, synced, then renamed over path.
func writeRecord(dir, path string, data []byte) error {
	f, err := os.CreateTemp(dir, ".new-*")
	if err != nil {
		return err
	}
	_, err = f.Write(append(data, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// removeRecord removes the record at path; a missing one is no error.
func removeRecord(path string) error {
	err := os.Remove(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// Get is box's record, if it has one.
func (s Restores) Get(box string) (Restoring, bool) {
	b, err := os.ReadFile(s.path(box))
	if err != nil {
		return Restoring{}, false
	}
	var r Restoring
	if json.Unmarshal(b, &r) != nil || (r.Archive == "") == (r.From == "") {
		return Restoring{}, false
	}
	r.Box = box
	return r, true
}

// All are the records, by box name.
func (s Restores) All() map[string]Restoring {
	out := map[string]Restoring{}
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		return out
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".json") && !strings.HasPrefix(n, ".") {
			names = append(names, strings.TrimSuffix(n, ".json"))
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if r, ok := s.Get(n); ok {
			out[n] = r
		}
	}
	return out
}
