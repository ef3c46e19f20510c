package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A bad executor door in boxes.yaml is refused by every command that reads
// it, at its line and column, before anything is made or written: the
// directory holds boxes.yaml alone, unchanged, after.
func TestBadExecutorDoorChangesNothing(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"version: 1\nboxes:\n  a:\n    executor:\n      egress: [\"https://x.test\"]\n", `boxes.yaml:5:16: egress: "https://x.test": a destination is a host name, not a URL`},
		{"version: 1\nboxes:\n  a:\n    executor: {private: [10.0.0.0/8]}\n", "boxes.yaml:4:16: executor: private: lists exceptions to the executor's door, which it has only with executor: egress:"},
		{"version: 1\nboxes:\n  a:\n    executor: {egress: [10.1.2.3]}\n", `boxes.yaml:4:25: executor: egress: "10.1.2.3" is in 10.0.0.0/8, a private range the gate closes whatever executor: egress: says`},
	} {
		for _, args := range [][]string{{"validate"}, {"plan"}, {"apply", "--auto-approve"}} {
			dir := t.TempDir()
			path := filepath.Join(dir, "boxes.yaml")
			writeFile(t, path, tc.yaml)
			before, _ := os.ReadFile(path)
			r := boxes(t, dir, args...)
			if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("%s of %q: %+v, want %q", args[0], tc.yaml, r, tc.want)
			}
			entries, err := os.ReadDir(dir)
			after, _ := os.ReadFile(path)
			if err != nil || len(entries) != 1 || string(after) != string(before) {
				t.Errorf("%s of a refused boxes.yaml left %v (%v), or changed it", args[0], entries, err)
			}
		}
	}
}
