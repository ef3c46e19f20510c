package workspace

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFreeArchivePathSkipsATakenName(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "backups"), 0o755); err != nil {
		t.Fatal(err)
	}
	first := FreeArchivePath(dir, "alpha")
	if err := os.WriteFile(first, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	second := FreeArchivePath(dir, "alpha")
	if second == first {
		t.Fatalf("a save right after another got the same name %s", second)
	}
	if _, err := os.Lstat(second); !os.IsNotExist(err) {
		t.Fatalf("%s is taken", second)
	}
}
