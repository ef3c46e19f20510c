package backup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/hermes-box/boxes/archive"
)

func TestExtractedText(t *testing.T) {
	x := Extracted{File: "/abs/alpha.age", Dir: "alpha",
		Manifest: archive.Manifest{Box: "alpha", Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		Summary:  archive.Summary{Files: 1, Dirs: 2, Bytes: 2048}}
	var b strings.Builder
	x.WriteText(&b, filepath.Base)
	if want := "extracted alpha.age (box alpha, saved 2026-01-02T03:04:05Z) to alpha/data: 1 file, 2 directories, 2.0 KiB\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

// A directory that holds anything is refused before a passphrase is asked for.
func TestExtractRefusesAFullDirBeforeAsking(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mine"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	asked := false
	_, err := Extract(context.Background(), "alpha.age", "alpha.age", dir, func() ([]age.Identity, error) { asked = true; return nil, nil }, archive.Options{})
	var full *NotEmptyError
	if !errors.As(err, &full) || full.Dir != dir || asked {
		t.Errorf("err %v, asked %v", err, asked)
	}
}
