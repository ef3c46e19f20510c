package workspace_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/workspace"
)

// unreachable is a connector whose every host is away.
type unreachable struct{}

func (unreachable) Connect(_ context.Context, h spec.Host) (engine.Engine, error) {
	return nil, errors.New("host " + h.Name + " cannot be reached")
}

// openUnreachable opens a workspace whose one box is on a host no engine
// answers at.
func openUnreachable(t *testing.T) *workspace.Workspace {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "boxes.yaml")
	config := "version: 1\nboxes:\n  alpha:\n    host: far\nhosts:\n  far: {docker: \"unix://" + dir + "/none.sock\"}\n"
	if err := os.WriteFile(file, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(file, workspace.Options{Connect: unreachable{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ws.Close)
	return ws
}

// logs reaches the box's host, and fails as it does.
func TestLogs(t *testing.T) {
	ws := openUnreachable(t)
	err := ws.Logs(t.Context(), "alpha", "agent", engine.LogOptions{}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "far") {
		t.Errorf("logs of a box on an unreachable host: %v", err)
	}
}

// exec waits for the box before its terminal is made raw: a box on an
// unreachable host fails with the terminal untouched.
func TestExecReadyOnlyOnceTheBoxIs(t *testing.T) {
	ws := openUnreachable(t)
	ready := false
	_, err := ws.Exec(t.Context(), "alpha", hb.Wait{}, engine.ExecOptions{Cmd: []string{"true"}}, func() func() { ready = true; return func() {} })
	if err == nil || !strings.Contains(err.Error(), "far") || ready {
		t.Errorf("exec in a box on an unreachable host: %v (terminal made raw: %v)", err, ready)
	}
}

// stillForward is a forward that is up.
type stillForward struct{ done chan struct{} }

func (f stillForward) URL() string           { return "http://127.0.0.1:4999" }
func (f stillForward) Done() <-chan struct{} { return f.done }
func (f stillForward) Err() error            { return nil }
func (f stillForward) Close() error          { return nil }

// open says what it did without the token, and that a forward stays open.
func TestDashboardText(t *testing.T) {
	d := &workspace.Dashboard{Box: "alpha", URL: "http://127.0.0.1:4801", Token: "secret", Browser: []string{"xdg-open"}}
	var b strings.Builder
	d.WriteText(&b)
	if want := "opened the dashboard of alpha (http://127.0.0.1:4801/) with xdg-open, signed in through a one-time local address; the token was not printed\n"; b.String() != want {
		t.Errorf("direct: %q, want %q", b.String(), want)
	}
	if err := d.Wait(t.Context()); err != nil {
		t.Errorf("Wait with no forward: %v", err)
	}
	b.Reset()
	d.Via, d.Forward = ", forwarded over ssh to 127.0.0.1:4801 on host nexus", stillForward{}
	d.WriteText(&b)
	if got := b.String(); strings.Contains(got, "secret") || !strings.HasSuffix(got, "on host nexus) with xdg-open, signed in through a one-time local address; the token was not printed\nthe forward stays open until Ctrl-C\n") {
		t.Errorf("forwarded: %q", got)
	}
}

// A reach is said as its URL, or where it is on which machine; the local
// engine's machine is named as such, not as an empty host: with
// DOCKER_HOST=ssh:// it is another machine too.
func TestReachWhere(t *testing.T) {
	for _, tc := range []struct {
		r          engine.Reach
		host, want string
	}{
		{engine.Reach{How: engine.ReachDirect, URL: "http://nexus:4800"}, "nexus", "http://nexus:4800"},
		{engine.Reach{How: engine.ReachSSHForward, OnHost: "127.0.0.1:4800"}, "nexus", "127.0.0.1:4800 on host nexus's loopback (boxes open web forwards it here over ssh)"},
		{engine.Reach{How: engine.ReachHostOnly, OnHost: "127.0.0.1:4800"}, "", "127.0.0.1:4800 on the engine's machine's loopback (reachable on that machine only)"},
	} {
		if got := tc.r.Where(tc.host, "web"); got != tc.want {
			t.Errorf("%+v on %q: %q, want %q", tc.r, tc.host, got, tc.want)
		}
	}
}
