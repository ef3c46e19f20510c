package backup

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

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
