package statedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
)

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
	// Held is set when read while the save that wrote it still runs
	// (and holds it): then it is no dead save's.
	Held bool `json:"-"`
}

func (r Freeze) box() string  { return r.Box }
func (r Freeze) check() error { return nil }

// Freezes is the store of freeze records: .boxes/frozen/BOX.json.
type Freezes struct{ Dir string }

var freezeKind = kind{
	name: "freeze record",
	ext:  ".json",
	stake: func(box string) string {
		return fmt.Sprintf("whether a save left %s frozen (its agent paused or quiesced)", box)
	},
	fix: func(box string) string {
		return fmt.Sprintf("boxes doctor %[1]s resumes %[1]s if its agent runs, and removes the file (boxes start %[1]s does, if %[1]s is stopped); "+
			"if %[1]s is gone, remove the file", box)
	},
}

func (s Freezes) records() jsonStore[Freeze] {
	return jsonStore[Freeze]{store{dir: s.Dir, kind: freezeKind}}
}

// HeldFreeze is a freeze record its writer holds.
type HeldFreeze struct {
	f    *os.File
	path string
}

// Hold writes the freeze record of r.Box, durably, and holds it until
// Release or Keep. The record appears under its name already locked, so
// that nobody takes it for a dead save's.
func (s Freezes) Hold(r Freeze) (*HeldFreeze, error) {
	if r.PID == 0 {
		r.PID = os.Getpid()
	}
	if r.Since.IsZero() {
		r.Since = time.Now().UTC()
	}
	b, err := encode(r)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(s.Dir, ".new-*")
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
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	path := s.records().path(r.Box)
	if err := os.Rename(f.Name(), path); err != nil {
		return fail(err)
	}
	if err := syncDir(s.Dir); err != nil {
		// Not durable: the box is not frozen yet, and the record goes.
		_ = (&HeldFreeze{f: f, path: path}).Release()
		return nil, err
	}
	return &HeldFreeze{f: f, path: path}, nil
}

// Release removes the record: the box is thawed.
func (h *HeldFreeze) Release() error {
	if h == nil || h.f == nil {
		return nil
	}
	err := removeRecord(h.path)
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

// Get is box's record, Held when its save still runs; ok is false when
// there is none.
func (s Freezes) Get(box string) (Freeze, bool, error) {
	recs := s.records()
	f, err := os.Open(recs.path(box))
	if errors.Is(err, fs.ErrNotExist) {
		return Freeze{}, false, nil
	}
	if err != nil {
		return Freeze{}, false, recs.bad(box, true, bareError(err))
	}
	defer f.Close()
	data, err := recs.readFrom(box, f)
	if err != nil {
		return Freeze{}, false, err
	}
	r, err := recs.decode(box, data)
	if err != nil {
		return Freeze{}, false, err
	}
	// A shared lock is refused while the writer holds its exclusive one.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return Freeze{}, false, fmt.Errorf("%s: %w", recs.shown(recs.path(box)), err)
		}
		r.Held = true
	}
	return r, true, nil
}

// All are the records, held or not, by box name.
func (s Freezes) All() (map[string]Freeze, error) {
	boxes, err := s.records().boxes()
	if err != nil {
		return nil, err
	}
	out := make(map[string]Freeze, len(boxes))
	for _, box := range boxes {
		r, ok, err := s.Get(box)
		if err != nil {
			return nil, err
		}
		if ok { // removed since it was listed
			out[box] = r
		}
	}
	return out, nil
}

// Stale are the records of saves that are no longer running, by box name.
func (s Freezes) Stale() (map[string]Freeze, error) {
	all, err := s.All()
	if err != nil {
		return nil, err
	}
	for box, r := range all {
		if r.Held {
			delete(all, box)
		}
	}
	return all, nil
}

// TakeStale takes over box's freeze record if the save that wrote it is
// gone: the caller thaws the box, then Releases it (or Keeps it when the
// thaw failed). It returns nil when there is no such record.
//
// A record that is there but is no valid freeze record is taken all the
// same, read as box's with no container: a thaw needs nothing from it but
// the box's name, which the file's name gives, and resuming a box that is
// not frozen does nothing. Taking it is what clears it; refusing it would
// leave the box frozen for good. Those that read records to decide (Get,
// Stale) refuse it, so it is never just forgotten.
func (s Freezes) TakeStale(box string) (*HeldFreeze, Freeze, error) {
	recs := s.records()
	path := recs.path(box)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Freeze{}, nil
	}
	if err != nil {
		return nil, Freeze{}, recs.bad(box, true, bareError(err))
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, Freeze{}, nil // a save runs
		}
		return nil, Freeze{}, fmt.Errorf("%s: %w", recs.shown(path), err)
	}
	r := Freeze{Box: box}
	if data, err := recs.readFrom(box, f); err == nil {
		if got, err := recs.decode(box, data); err == nil {
			r = got
		}
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
