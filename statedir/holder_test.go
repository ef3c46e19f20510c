package statedir

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BoxHolder names another live process holding a box's lock, and neither
// this process nor a line a dead one left behind.
func TestBoxHolder(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "boxes.yaml")
	if got := BoxHolder(config, "alpha"); got != "" {
		t.Errorf("no lock file: %q", got)
	}
	l, err := LockBox(config, "alpha", "boxes save")
	if err != nil {
		t.Fatal(err)
	}
	if got := BoxHolder(config, "alpha"); got != "" {
		t.Errorf("this process's own lock named as a holder: %q", got)
	}
	l.Unlock()

	live := exec.Command("sleep", "30")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = live.Process.Kill(); _ = live.Wait() }()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	path := filepath.Join(dir, ".boxes", "locks", "alpha.lock")
	for _, c := range []struct {
		pid  int
		host string
		held bool
	}{{live.Process.Pid, host, true}, {dead.Process.Pid, host, false}, {dead.Process.Pid, "elsewhere", true}} {
		line := fmt.Sprintf("boxes apply (pid %d on %s, since 2026-12-03T10:00:00Z)", c.pid, c.host)
		if err := os.WriteFile(path, []byte(line+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		want := ""
		if c.held {
			want = line
		}
		if got := BoxHolder(config, "alpha"); got != want {
			t.Errorf("pid %d on %s: holder %q, want %q", c.pid, c.host, got, want)
		}
	}
}
