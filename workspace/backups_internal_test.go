package workspace

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Archives are found by the names save gives them, in every format boxes
// reads, the smolvm tool's included; other files are not archives.
func TestBackupsSeeEveryFormat(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"alpha-20260101-000000.tar.gz.gpg", "beta-20260101-000000.tar.gz.age", "gamma-20261202-101500.tar.zst.age", "delta-x.tar.zst.age", "eps-20261202-101500.zip"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	files := backupsIn(dir)
	for _, box := range []string{"alpha", "beta", "gamma"} {
		if files.newest(box, time.Time{}) == "" {
			t.Errorf("no backup found for %s in %v", box, files)
		}
	}
	if len(files) != 3 {
		t.Errorf("found %v, want alpha, beta and gamma only", files)
	}
}
