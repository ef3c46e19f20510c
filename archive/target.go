package archive

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// stageName is the hidden directory in the target that an extraction
// writes the data into, moved to data/ once whole. Being in the target,
// it is on its file system (the move is one rename), and what a crash
// leaves of it there makes the target refused by the next extraction,
// which takes only an empty one.
const stageName = "." + dataRoot + ".partial"

// target is the directory an extraction writes into, and what it takes to
// leave it as it was: an extraction that does not finish removes what it
// wrote, the target and its parents if it made them, else gives the
// target back its mtime.
type target struct {
	dir       string
	root      *os.Root // dir
	stage     *os.Root // dir/stageName
	made      []string // the directories made for dir, dir first
	mtime     time.Time
	committed bool // the data was moved into place
}

// newTarget makes dir, with its parents, if it does not exist, else checks
// that it is an empty directory; then it makes the stage in it.
func newTarget(dir string) (*target, error) {
	t := &target{dir: dir}
	if err := t.prepare(); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err == nil {
		t.root = root
		if err = root.Mkdir(stageName, 0o700); err == nil {
			t.stage, err = root.OpenRoot(stageName)
		}
	}
	if err != nil {
		t.undo()
		t.close()
		return nil, fmt.Errorf("archive: %w", err)
	}
	return t, nil
}

// prepare makes dir if it is missing, else checks that it is an empty
// directory and notes its mtime.
func (t *target) prepare() error {
	if t.made = missing(t.dir); len(t.made) > 0 {
		if err := os.MkdirAll(t.dir, 0o700); err != nil {
			t.undo()
			return fmt.Errorf("archive: %w", err)
		}
		return nil
	}
	f, err := os.Open(t.dir)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if len(names) > 0 {
		return fmt.Errorf("archive: %s is not empty", t.dir)
	}
	if err != nil && err != io.EOF {
		return fmt.Errorf("archive: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	t.mtime = fi.ModTime()
	return nil
}

// missing returns dir and those of its parents that do not exist, dir
// first.
func missing(dir string) []string {
	var out []string
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			return out
		}
		out = append(out, p)
		if filepath.Dir(p) == p {
			return out
		}
	}
}

// commit moves the whole data into place and gives data/ its header's
// mtime and mode.
func (t *target) commit(data *tar.Header) error {
	if err := t.root.Rename(stageName+"/"+dataRoot, dataRoot); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	t.committed = true
	if err := t.root.Remove(stageName); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	return setDir(t.root, dataRoot, data)
}

// close frees the roots, once done or undone.
func (t *target) close() {
	if t.stage != nil {
		t.stage.Close()
	}
	if t.root != nil {
		t.root.Close()
	}
}

// undo removes what the extraction wrote and the directories it made, or
// gives dir back its mtime.
func (t *target) undo() {
	if t.root != nil {
		t.root.RemoveAll(stageName)
		if t.committed {
			t.root.RemoveAll(dataRoot)
		}
	}
	for _, d := range t.made {
		os.Remove(d)
	}
	if !t.mtime.IsZero() { // set only when the target was there before
		os.Chtimes(t.dir, time.Time{}, t.mtime)
	}
}
