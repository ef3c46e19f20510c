package workspace_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/workspace"
)

// save writes to the name given or a default one under backups/, and never
// over a file that exists.
func TestSaveTo(t *testing.T) {
	dir := t.TempDir()
	shown := func(p string) string { return filepath.Base(p) }
	got, err := workspace.SaveTo(dir, "alpha", "", shown)
	if err != nil || filepath.Dir(got) != filepath.Join(dir, "backups") || !strings.HasPrefix(filepath.Base(got), "alpha-") || !strings.HasSuffix(got, archive.Ext) {
		t.Fatalf("default: %q %v", got, err)
	}
	out := filepath.Join(dir, "mine"+archive.Ext)
	if got, err := workspace.SaveTo(dir, "alpha", out, shown); got != out || err != nil {
		t.Errorf("named: %q %v", got, err)
	}
	if err := os.WriteFile(out, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := workspace.SaveTo(dir, "alpha", out, shown); !errors.Is(err, backup.ErrExists) || !strings.HasPrefix(err.Error(), "mine"+archive.Ext+": ") {
		t.Errorf("taken: %v", err)
	}
	// A name load would not take as an archive's, or one of an older
	// format's extension, is refused before anything is written.
	for _, name := range []string{"mine.tar", "mine.tar.zst.age", "mine" + archive.Ext + ".bak"} {
		_, err := workspace.SaveTo(dir, "alpha", filepath.Join(dir, name), shown)
		if !errors.Is(err, workspace.ErrArchiveExt) || err.Error() != name+": an archive's name ends in "+archive.Ext+", the format save writes" {
			t.Errorf("%s: %v", name, err)
		}
		if _, serr := os.Lstat(filepath.Join(dir, name)); serr == nil {
			t.Errorf("%s was written", name)
		}
	}
}

// save's result names the box's host and the archive, and its sha256 only
// when asked (for --json).
func TestSavedResult(t *testing.T) {
	f := newFleet(t)
	ws := f.open(t)
	out := filepath.Join(f.dir, "a"+archive.Ext)
	if err := os.WriteFile(out, []byte("sealed"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := backup.Saved{Summary: archive.Summary{Files: 2, Dirs: 3, Bytes: 4}, Size: 6}
	res, err := ws.Saved("gamma", out, s, false)
	if err != nil || res.Host != "nexus" || res.Archive != out || res.ArchiveBytes != 6 || *res.Files != 2 || res.SHA256 != "" {
		t.Errorf("text: %+v %v", res, err)
	}
	if res, err := ws.Saved("gamma", out, s, true); err != nil || len(res.SHA256) != 64 {
		t.Errorf("json: %+v %v", res, err)
	}
}
