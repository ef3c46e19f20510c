package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/fakeengine"
	"github.com/hermes-box/boxes/mcpserver"
	"github.com/hermes-box/boxes/spec"
)

// onFakeEngines are connectors to fake engines whose state is a file of dir
// (see internal/fakeengine), whose local engine has image.
func onFakeEngines(t *testing.T, dir, image string) Connectors {
	t.Helper()
	path := filepath.Join(dir, "engines.json")
	if err := fakeengine.Edit(path, func(s *fakeengine.State) error { s.AddImage("", image); return nil }); err != nil {
		t.Fatal(err)
	}
	// A command that reaches for Docker itself fails fast.
	t.Setenv("DOCKER_HOST", "unix://"+dir+"/no-docker.sock")
	return Connectors{spec.HostDocker: func() engine.Connector { return &fakeengine.Connector{Path: path} }}
}

// mcpSession is a session of boxes mcp on boxes.yaml in dir, run in-process
// with the hosts reached through c.
func mcpSession(t *testing.T, dir string, c Connectors, o mcpserver.Options) func(name string, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	s, _ := mcpserver.NewWith(inProcess(c), filepath.Join(dir, "boxes.yaml"), "test", o)
	if _, err := s.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return mcpCaller(t, cs)
}

// Whether boxes mcp may work in a box that is or was a pool's is the
// engine's to say, not boxes.yaml's: once the pool leaves boxes.yaml (or
// its box's name is declared as a plain box), a session that does not hold
// the box's lease reaches it no more than before, and the session that
// held it reaches it only while the engine says the lease is still its.
func TestMCPConfinesPoolBoxesByTheEngine(t *testing.T) {
	dir := t.TempDir()
	const image = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	fake := onFakeEngines(t, dir, image)
	file := filepath.Join(dir, "boxes.yaml")
	withPool := "version: 1\nfleet: main\npools:\n  scratch: {size: 2}\nboxes:\n  alpha: {}\n"
	writeFile(t, file, withPool)
	writeFile(t, filepath.Join(dir, "boxes.lock"), "version: 1\nimage:\n  id: "+image+"\n")
	if r := boxesWith(t, fake, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}

	holder := mcpSession(t, dir, fake, mcpserver.Options{AllowLease: true})
	res, out := holder("lease", map[string]any{"pool": "scratch", "holder": "mcp-a"})
	var l mcpserver.Lease
	if res.IsError || json.Unmarshal([]byte(out), &l) != nil || l.Box != "scratch-1" {
		t.Fatalf("lease: %v %s", res.IsError, out)
	}
	readOnly := mcpSession(t, dir, fake, mcpserver.Options{})
	other := mcpSession(t, dir, fake, mcpserver.Options{AllowLease: true})
	refused := func(call func(string, map[string]any) (*mcp.CallToolResult, string), who, box, want string) {
		t.Helper()
		for _, tc := range []struct {
			tool string
			args map[string]any
		}{
			{"exec", map[string]any{"box": box, "command": []string{"cat", "/data/home/agent/notes"}}},
			{"logs", map[string]any{"box": box}},
			{"doctor", map[string]any{"box": box}},
		} {
			if res, out := call(tc.tool, tc.args); !res.IsError || !strings.Contains(out, want) {
				t.Errorf("%s: %s of %s was not refused with %q: %v %s", who, tc.tool, box, want, res.IsError, out)
			}
		}
	}

	for _, config := range []string{
		"version: 1\nfleet: main\nboxes:\n  alpha: {}\n",
		"version: 1\nfleet: main\nboxes:\n  alpha: {}\n  scratch-1: {}\n  scratch-2: {}\n",
	} {
		writeFile(t, file, config)
		for who, call := range map[string]func(string, map[string]any) (*mcp.CallToolResult, string){"read-only": readOnly, "another session": other} {
			refused(call, who, "scratch-1", "scratch-1 is, or was, a box of pool scratch, reached only under its lease")
			refused(call, who, "scratch-2", "scratch-2 is, or was, a box of pool scratch, reached only under its lease")
			if res, out := call("logs", map[string]any{"box": "alpha"}); res.IsError {
				t.Errorf("%s: logs of alpha: %s", who, out)
			}
		}
		if res, out := holder("logs", map[string]any{"box": "scratch-1"}); res.IsError {
			t.Errorf("the holder: logs of scratch-1: %s", out)
		}
	}

	// The engine's word on the lease's end is the one that counts.
	if err := fakeengine.Edit(filepath.Join(dir, "engines.json"), func(s *fakeengine.State) error {
		return s.ExpireLease("scratch-1", time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))
	}); err != nil {
		t.Fatal(err)
	}
	refused(holder, "the session whose lease expired", "scratch-1", "lease "+l.Lease+" of scratch-1 expired at 2000-01-01T00:00:00Z")

	// The lease ends behind the session (a person releases the box) and
	// someone else leases it anew: the session, which still counts the
	// box as its own, reaches it no more.
	writeFile(t, file, withPool)
	if r := boxesWith(t, fake, dir, "release", "scratch-1"); r.code != 0 {
		t.Fatalf("release: %+v", r)
	}
	if r := boxesWith(t, fake, dir, "lease", "scratch", "--holder", "someone"); r.code != 0 || !strings.Contains(r.stdout, "scratch-1") {
		t.Fatalf("lease again: %+v", r)
	}
	refused(holder, "the session that held it", "scratch-1", "lease "+l.Lease+" of scratch-1 has ended: the box is not yours any more")
	for tool, args := range map[string]map[string]any{
		"read_file":  {"box": "scratch-1", "path": "notes"},
		"write_file": {"box": "scratch-1", "path": "notes", "content": "x"},
	} {
		if res, out := holder(tool, args); !res.IsError || !strings.Contains(out, "has ended") {
			t.Errorf("the session that held it: %s: %v %s", tool, res.IsError, out)
		}
	}
}
