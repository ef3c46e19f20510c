package statedir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ErrBadRecord is what every store's error for a record that is there but
// cannot be used wraps: unreadable, not valid JSON, or not a valid record.
// Test for it with errors.Is; the error itself is a *BadRecordError.
var ErrBadRecord = errors.New("bad record")

// BadRecordError is a record under .boxes/ that is there but cannot be used.
// It names the file, what boxes will not guess without it, and (as its
// hint) what to do.
type BadRecordError struct {
	// Path is the file, as messages name it: relative to boxes.yaml's
	// directory (.boxes/…).
	Path string
	// Kind is what the file should be ("restore record").
	Kind string
	// Unreadable is set when the file could not be read at all.
	Unreadable bool
	// Err is why it cannot be used.
	Err error
	// Stake is what boxes will not guess without it ("whether web's …").
	Stake string
	// Fix is what to do about it.
	Fix string
}

func (e *BadRecordError) Error() string {
	what := "is not a " + e.Kind
	if e.Unreadable {
		what = "cannot be read"
	}
	return fmt.Sprintf("%s %s (%v): boxes will not guess %s", e.Path, what, e.Err, e.Stake)
}

// Is makes every BadRecordError an ErrBadRecord.
func (e *BadRecordError) Is(target error) bool { return target == ErrBadRecord }

// Unwrap is why the record cannot be used.
func (e *BadRecordError) Unwrap() error { return e.Err }

// Hint is what to do about it.
func (e *BadRecordError) Hint() string { return e.Fix }

// kind says what a store's records are and what a bad one means: the
// wording of its BadRecordError.
type kind struct {
	// name is what a record is ("restore record").
	name string
	// ext ends its file's name (".json").
	ext string
	// stake and fix are BadRecordError's Stake and Fix for box's record.
	stake, fix func(box string) string
}

// store is a directory of one kind of record, one file per box: BOX+ext.
// It reads, lists, writes and removes them under the one contract of the
// package (see the package doc).
type store struct {
	dir string
	kind
}

func (s store) path(box string) string { return filepath.Join(s.dir, box+s.ext) }

// shown is path as messages name it: relative to boxes.yaml's directory
// when it is under .boxes/.
func (s store) shown(path string) string {
	rel, err := filepath.Rel(filepath.Dir(filepath.Dir(s.dir)), path)
	if err != nil || !strings.HasPrefix(rel, Name+string(filepath.Separator)) {
		return path
	}
	return rel
}

// bad is the error of box's record that cannot be used, because of err.
func (s store) bad(box string, unreadable bool, err error) error {
	return &BadRecordError{Path: s.shown(s.path(box)), Kind: s.name, Unreadable: unreadable, Err: err,
		Stake: s.stake(box), Fix: s.fix(box)}
}

// read is the content of box's record; ok is false when there is none. A
// record that is there but cannot be read is a BadRecordError.
func (s store) read(box string) (data []byte, ok bool, err error) {
	data, err = os.ReadFile(s.path(box))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, s.bad(box, true, bareError(err))
	}
	return data, true, nil
}

// readFrom is read for a record already open as f.
func (s store) readFrom(box string, f *os.File) ([]byte, error) {
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, s.bad(box, true, bareError(err))
	}
	return data, nil
}

// bareError is err without the path a *fs.PathError repeats.
func bareError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// boxes are the boxes with a record, in name order; a missing directory
// has none. Hidden files (a write's temporary file) are no record.
func (s store) boxes() ([]string, error) {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		box, ok := strings.CutSuffix(e.Name(), s.ext)
		if ok && box != "" && !strings.HasPrefix(box, ".") {
			out = append(out, box)
		}
	}
	sort.Strings(out)
	return out, nil
}

// write writes data as box's record, atomically and durably.
func (s store) write(box string, data []byte) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	return writeRecord(s.dir, s.path(box), data)
}

// remove removes box's record; a missing one is no error.
func (s store) remove(box string) error { return removeRecord(s.path(box)) }

// writeRecord writes data to path, a record in dir, durably and atomically:
// a temporary file in dir (mode 0600), synced, renamed over path, and the
// rename synced.
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
		return err
	}
	return syncDir(dir)
}

// syncDir makes the names in dir durable: a rename into it, a removal.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
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

// record is a JSON record of one box: it names its box, and says what
// makes it invalid beyond that.
type record interface {
	box() string
	check() error
}

// jsonStore is a store of JSON records of type R.
type jsonStore[R record] struct{ store }

// decode is box's record from data: a BadRecordError unless data is one
// valid record of box.
func (s jsonStore[R]) decode(box string, data []byte) (R, error) {
	var r R
	err := json.Unmarshal(data, &r)
	if err == nil && r.box() != box {
		err = fmt.Errorf("its box is %q", r.box())
	}
	if err == nil {
		err = r.check()
	}
	if err != nil {
		var zero R
		return zero, s.bad(box, false, err)
	}
	return r, nil
}

// get is box's record; ok is false when there is none.
func (s jsonStore[R]) get(box string) (r R, ok bool, err error) {
	data, ok, err := s.read(box)
	if !ok || err != nil {
		return r, false, err
	}
	if r, err = s.decode(box, data); err != nil {
		return r, false, err
	}
	return r, true, nil
}

// all are the records by box name; the first bad one, in name order, is
// the error.
func (s jsonStore[R]) all() (map[string]R, error) {
	boxes, err := s.boxes()
	if err != nil {
		return nil, err
	}
	out := make(map[string]R, len(boxes))
	for _, box := range boxes {
		r, ok, err := s.get(box)
		if err != nil {
			return nil, err
		}
		if ok { // removed since it was listed
			out[box] = r
		}
	}
	return out, nil
}

// encode is r as its file holds it.
func encode[R record](r R) ([]byte, error) {
	if err := r.check(); err != nil {
		return nil, fmt.Errorf("record of %s: %w", r.box(), err)
	}
	return json.MarshalIndent(r, "", "  ")
}

// put writes r as its box's record.
func (s jsonStore[R]) put(r R) error {
	data, err := encode(r)
	if err != nil {
		return err
	}
	return s.write(r.box(), data)
}
