package cli

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/hermes-box/boxes/backup"
)

// decodeResult is the --json result a command printed: the only thing on stdout.
func decodeResult(t *testing.T, r run) boxResult {
	t.Helper()
	var res boxResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.FormatVersion != 1 {
		t.Fatalf("not a result (%v): %+v", err, r)
	}
	return res
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	sum, err := backup.FileSHA256(path)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "0 boxes", 1: "1 box", 2: "2 boxes"} {
		if got := plural(n, "box", "boxes"); got != want {
			t.Errorf("plural(%d) = %q", n, got)
		}
	}
}
