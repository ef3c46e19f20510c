package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.org",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.org", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// TestDiffExitCodes: diff's exit code is always detailed (0 none, 2 changes,
// 1 error) and each format carries the plan.
func TestDiffExitCodes(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	lock := "version: 1\npins:\n  base:\n    image: ubuntu:24.04\n    digest: sha256:" + strings.Repeat("ab", 32) +
		"\nimage:\n  id: sha256:" + strings.Repeat("cd", 32) + "\n  ref: t\n  built: \"2026-12-02T10:15:00Z\"\n"
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nboxes:\n  alpha: {}\n  old: {}\n")
	writeFile(t, filepath.Join(dir, "boxes.lock"), lock)
	gitIn(t, dir, "init", "-q", "-b", "main")
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "base")

	if r := boxes(t, dir, "diff"); r.code != 0 || !strings.Contains(r.stdout, "No changes.") {
		t.Errorf("diff of an unchanged tree: %+v", r)
	}
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nboxes:\n  alpha: {state: stopped}\n")
	r := boxes(t, dir, "diff", "main")
	if r.code != 2 || !strings.Contains(r.stdout, "Plan: 0 to create, 0 to recreate, 0 to start, 1 to stop, 1 to delete.") {
		t.Errorf("diff main: %+v", r)
	}
	if r := boxes(t, dir, "diff", "--markdown"); r.code != 2 || !strings.Contains(r.stdout, "> **Box `old` is deleted with its data.**") {
		t.Errorf("diff --markdown: %+v", r)
	}
	if r := boxes(t, dir, "diff", "--json", "--detailed-exitcode"); r.code != 2 || !strings.Contains(r.stdout, `"ref": "HEAD"`) || !strings.Contains(r.stdout, `"delete": 1`) {
		t.Errorf("diff --json: %+v", r)
	}
	if r := boxes(t, dir, "diff", "nope"); r.code != 1 || !strings.Contains(r.stderr, "boxes: error: nope: not a commit") || !strings.Contains(r.stderr, "boxes: hint:") {
		t.Errorf("diff nope: %+v", r)
	}
	if r := boxes(t, dir, "diff", "a", "b"); r.code != 1 || !strings.Contains(r.stderr, "at most one Git revision") {
		t.Errorf("diff a b: %+v", r)
	}
}
