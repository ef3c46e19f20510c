package statedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/hermes-box/boxes/internal/par"
)

// Exposure is a secret file or directory that others than its owner can reach.
type Exposure struct {
	Path string
	Mode fs.FileMode // what it is
	Want fs.FileMode // what it should be
}

func (e Exposure) String() string {
	return fmt.Sprintf("%s is %04o, want %04o", e.Path, e.Mode.Perm(), e.Want)
}

// Exposed lists the token directory and token files whose modes let group or
// others read, write or enter them. A missing directory exposes nothing.
func (t Tokens) Exposed() ([]Exposure, error) {
	info, err := os.Stat(t.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Exposure
	if info.Mode().Perm()&0o077 != 0 {
		out = append(out, Exposure{Path: t.Dir, Mode: info.Mode().Perm(), Want: 0o700})
	}
	entries, err := os.ReadDir(t.Dir)
	if err != nil {
		return nil, err
	}
	// A fleet's directory holds thousands: their modes are read in parallel.
	files := make([]fs.DirEntry, 0, len(entries))
	for _, e := range entries {
		if e.Type().IsRegular() {
			files = append(files, e)
		}
	}
	modes := make([]fs.FileMode, len(files))
	errs := make([]error, len(files))
	par.Each(len(files), func(i int) {
		fi, err := files[i].Info()
		if err == nil {
			modes[i] = fi.Mode().Perm()
		} else if !errors.Is(err, fs.ErrNotExist) {
			errs[i] = err
		}
	})
	for i, e := range files {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if modes[i]&0o077 != 0 {
			out = append(out, Exposure{Path: filepath.Join(t.Dir, e.Name()), Mode: modes[i], Want: 0o600})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// Restrict gives every exposed secret its mode back and returns what it changed.
func (t Tokens) Restrict() ([]Exposure, error) {
	exposed, err := t.Exposed()
	if err != nil {
		return nil, err
	}
	for _, e := range exposed {
		if err := os.Chmod(e.Path, e.Want); err != nil {
			return nil, fmt.Errorf("restricting %s: %w", e.Path, err)
		}
	}
	return exposed, nil
}
