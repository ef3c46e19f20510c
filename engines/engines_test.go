package engines

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/hb"
)

// openUnreachable opens a workspace whose one box is on a host no engine
// answers at.
func openUnreachable(t *testing.T) *Workspace {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "boxes.yaml")
	config := "version: 1\nboxes:\n  alpha:\n    host: far\nhosts:\n  far: {docker: \"unix://" + dir + "/none.sock\"}\n"
	if err := os.WriteFile(file, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := Open(file, docker.Options{}, func(p string) string { return p }, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ws.Close)
	return ws
}

// logs reaches the box's host, and fails as it does.
func TestLogs(t *testing.T) {
	ws := openUnreachable(t)
	err := ws.Logs(t.Context(), "alpha", "agent", docker.LogOptions{}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "far") {
		t.Errorf("logs of a box on an unreachable host: %v", err)
	}
}

// exec waits for the box before its terminal is made raw: a box on an
// unreachable host fails with the terminal untouched.
func TestExecReadyOnlyOnceTheBoxIs(t *testing.T) {
	ws := openUnreachable(t)
	ready := false
	_, err := ws.Exec(t.Context(), "alpha", hb.Wait{}, docker.ExecOptions{Cmd: []string{"true"}}, func() func() { ready = true; return func() {} })
	if err == nil || !strings.Contains(err.Error(), "far") || ready {
		t.Errorf("exec in a box on an unreachable host: %v (terminal made raw: %v)", err, ready)
	}
}
