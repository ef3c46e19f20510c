package archive_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-box/boxes/archive"
)

// dirState is what a test expects to find unchanged of a directory: its
// entries, mode and mtime, or that it does not exist.
type dirState struct {
	exists  bool
	names   []string
	mode    fs.FileMode
	modTime time.Time
}

func stateOf(t *testing.T, dir string) dirState {
	t.Helper()
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return dirState{}
	}
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := dirState{exists: true, mode: fi.Mode(), modTime: fi.ModTime()}
	for _, e := range entries {
		s.names = append(s.names, e.Name())
	}
	return s
}

func (s dirState) String() string {
	if !s.exists {
		return "missing"
	}
	return fmt.Sprintf("%v, %v, holding %q", s.mode, s.modTime, s.names)
}

func (s dirState) same(o dirState) bool {
	return s.exists == o.exists && strings.Join(s.names, "/") == strings.Join(o.names, "/") &&
		s.mode == o.mode && s.modTime.Equal(o.modTime)
}

// targets are the directories an extraction may be given: one that does
// not exist, nor do its parents, and an existing empty one with an mtime of
// its own. Each returns the target and the directory to compare before and
// after (the first one made for a new target).
func targets() map[string]func(t *testing.T) (dst, top string) {
	return map[string]func(t *testing.T) (string, string){
		"new directory": func(t *testing.T) (string, string) {
			top := filepath.Join(t.TempDir(), "a")
			return filepath.Join(top, "b", "out"), top
		},
		"existing empty directory": func(t *testing.T) (string, string) {
			dst := filepath.Join(t.TempDir(), "out")
			if err := os.Mkdir(dst, 0o750); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(dst, mtime, mtime); err != nil {
				t.Fatal(err)
			}
			return dst, dst
		},
	}
}

// An extraction that fails half-way leaves its target as it was: no
// parents it made, and an existing target's mtime.
func TestExtractFailureLeavesTheTargetAsItWas(t *testing.T) {
	ar := sealData(t, append(append([]entry{}, boxData()...), file("data/home/agent/.bashrc", 0o644, "again")))
	for name, target := range targets() {
		t.Run(name, func(t *testing.T) {
			dst, top := target(t)
			before := stateOf(t, top)
			_, _, err := archive.Extract(bytes.NewReader(ar), dst, identity(t, passphrase))
			wantErr(t, "Extract", err, "duplicate")
			if after := stateOf(t, top); !after.same(before) {
				t.Errorf("the target was %v before, %v after", before, after)
			}
		})
	}
}

// A whole extraction leaves nothing in its target but data/, which keeps
// its own mode even when its owner may not write to it (a directory that
// is moved must be writable).
func TestExtractLeavesOnlyData(t *testing.T) {
	in := append([]entry{dir("data/", 0o555)}, boxData()[1:]...)
	for name, target := range targets() {
		t.Run(name, func(t *testing.T) {
			dst, _ := target(t)
			// Else the temporary directory cannot be removed.
			t.Cleanup(func() { os.Chmod(filepath.Join(dst, "data"), 0o700) })
			if _, _, err := archive.Extract(bytes.NewReader(write(t, in)), dst, identity(t, passphrase)); err != nil {
				t.Fatal(err)
			}
			if s := stateOf(t, dst); strings.Join(s.names, " ") != "data" {
				t.Errorf("%s holds %v, want data only", dst, s.names)
			}
			fi, err := os.Stat(filepath.Join(dst, "data"))
			if err != nil || fi.Mode().Perm() != 0o555 || !fi.ModTime().Equal(mtime) {
				t.Errorf("data/: %v, %v; want mode 0555, mtime %v", fi.Mode(), err, mtime)
			}
		})
	}
}
