package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakePool answers lease, renew, release and exec as boxes would for a
// pool "p" whose free boxes are p-1, p-2, …, recording each command line.
type fakePool struct {
	mu    sync.Mutex
	calls [][]string
	next  int
}

func (f *fakePool) run(_ context.Context, args []string, stdout, stderr io.Writer) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, args[2:])
	switch args[2] {
	case "lease":
		f.next++
		expires := "2099-01-01T00:00:00Z"
		if args[5] == "short" {
			expires = "2000-01-01T00:00:00Z" // a lease that has ended since
		}
		fmt.Fprintf(stdout, `{"box": "p-%d", "pool": "p", "holder": %q, "lease": "id%d", "expires": %q}`, f.next, args[5], f.next, expires)
	case "renew":
		fmt.Fprintf(stdout, `{"box": %q, "pool": "p", "lease": %q, "expires": "2099-01-02T00:00:00Z"}`, args[3], args[5])
	case "release":
		fmt.Fprintf(stdout, "released %s: it is reset\n", args[3])
	case "exec":
		fmt.Fprint(stdout, "ran\n")
	default:
		fmt.Fprintf(stderr, "boxes: error: %s\n", args[2])
		return 1
	}
	return 0
}

func (f *fakePool) commands() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// leaseSession is a session with --allow lease over a boxes.yaml with pool
// p and box alpha; end ends it.
func leaseSession(t *testing.T, f *fakePool) (cs *mcp.ClientSession, end func(context.Context) error) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "boxes.yaml")
	if err := os.WriteFile(file, []byte("version: 1\nfleet: t\npools:\n  p: {size: 2}\nboxes:\n  alpha: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	s, end := NewWith(f.run, file, "test", Options{AllowLease: true})
	if _, err := s.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, end
}

// toolError is the refusal of a tool call: the SDK's error or the tool's.
func toolError(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	switch {
	case err != nil:
		return err.Error()
	case res.IsError:
		return text(res)
	}
	t.Fatalf("%s %v was not refused: %s", name, args, text(res))
	return ""
}

func TestLeaseToolsOnlyWithAllow(t *testing.T) {
	for _, allow := range []bool{false, true} {
		st, ct := mcp.NewInMemoryTransports()
		s, _ := NewWith((&fakePool{}).run, "/w/boxes.yaml", "test", Options{AllowLease: allow})
		if _, err := s.Connect(context.Background(), st, nil); err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(context.Background(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for tool, err := range cs.Tools(context.Background(), nil) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, tool.Name)
		}
		cs.Close()
		want := slices.Clone(Tools)
		if allow {
			want = append(want, LeaseTools...)
		}
		sort.Strings(names)
		sort.Strings(want)
		if !reflect.DeepEqual(names, want) {
			t.Errorf("allow %v: tools %v, want %v", allow, names, want)
		}
	}
}

// A session leases, works in what it holds and nothing else of the pool,
// and gives back at its end what it did not release.
func TestLeaseSession(t *testing.T) {
	f := &fakePool{}
	cs, end := leaseSession(t, f)
	lease := func() Lease {
		res := call(t, cs, "lease", map[string]any{"pool": "p", "holder": "agent-7", "ttl": "1h"})
		var l Lease
		if res.IsError || json.Unmarshal([]byte(text(res)), &l) != nil {
			t.Fatalf("lease: %v %s", res.IsError, text(res))
		}
		return l
	}
	first, second := lease(), lease()
	if first.Box != "p-1" || second.Box != "p-2" || first.Holder != "agent-7" {
		t.Fatalf("leases %+v %+v", first, second)
	}
	if res := call(t, cs, "exec", map[string]any{"box": "p-1", "command": []string{"true"}}); res.IsError {
		t.Errorf("exec in a held box: %s", text(res))
	}
	if msg := toolError(t, cs, "exec", map[string]any{"box": "p-3", "command": []string{"true"}}); !strings.Contains(msg, "p-3 is a box of pool p that this session does not hold") {
		t.Errorf("exec in a pool box not held: %q", msg)
	}
	if res := call(t, cs, "exec", map[string]any{"box": "alpha", "command": []string{"true"}}); res.IsError {
		t.Errorf("exec in a declared box: %s", text(res))
	}
	if res := call(t, cs, "write_file", map[string]any{"box": "p-1", "path": "work/notes.txt", "content": "a 'quoted' $line\n"}); res.IsError || text(res) != "wrote 17 bytes to /data/home/agent/work/notes.txt" {
		t.Errorf("write_file: %v %q", res.IsError, text(res))
	}
	if res := call(t, cs, "read_file", map[string]any{"box": "p-1", "path": "work/notes.txt", "max_bytes": 10}); res.IsError {
		t.Errorf("read_file: %s", text(res))
	}
	if res := call(t, cs, "renew", map[string]any{"box": "p-2", "ttl": "2h"}); res.IsError {
		t.Errorf("renew: %s", text(res))
	}
	if res := call(t, cs, "release", map[string]any{"box": "p-1"}); res.IsError {
		t.Errorf("release: %s", text(res))
	}
	if msg := toolError(t, cs, "read_file", map[string]any{"box": "p-1", "path": "x"}); !strings.Contains(msg, "this session holds no box p-1") {
		t.Errorf("read_file of a released box: %q", msg)
	}
	if err := end(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"lease", "p", "--holder", "agent-7", "--ttl", "1h0m0s", "--wait", "0s", "--json"},
		{"lease", "p", "--holder", "agent-7", "--ttl", "1h0m0s", "--wait", "0s", "--json"},
		// Under the session's lease on the engine, or away from any pool's box.
		{"exec", "p-1", "--lease", "id1", "--", "timeout", "-k", "5", "600", "true"},
		{"exec", "alpha", "--no-pool", "--", "timeout", "-k", "5", "600", "true"},
		{"exec", "p-1", "--lease", "id1", "--", "sh", "-c", writeScript, "write_file", "/data/home/agent", "work/notes.txt", "a 'quoted' $line\n"},
		{"exec", "p-1", "--lease", "id1", "--", "sh", "-c", readScript, "read_file", "/data/home/agent", "work/notes.txt", "10"},
		{"renew", "p-2", "--lease", "id2", "--ttl", "2h0m0s", "--json"},
		{"release", "p-1", "--lease", "id1"},
		// The end of the session: what it still holds, that lease only.
		{"release", "p-2", "--lease", "id2"},
	}
	if got := f.commands(); !reflect.DeepEqual(got, want) {
		t.Errorf("command lines\n got %q\nwant %q", got, want)
	}
}

func TestLeaseToolsRefuseBadArguments(t *testing.T) {
	f := &fakePool{}
	cs, _ := leaseSession(t, f)
	call(t, cs, "lease", map[string]any{"pool": "p"})
	before := len(f.commands())
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"lease", map[string]any{"pool": "-f"}, "pool: \"-f\" is not a box name"},
		{"lease", map[string]any{"pool": "p", "ttl": "10s"}, "ttl 10s: want 1m0s to 8h0m0s"},
		{"lease", map[string]any{"pool": "p", "ttl": "soon"}, `ttl "soon": a duration`},
		{"lease", map[string]any{"pool": "p", "wait": "1h"}, "wait 1h0m0s: want 0s to 10m0s"},
		{"lease", map[string]any{"pool": "p", "holder": "two\nlines"}, "holder: at most 200 characters on one line"},
		{"renew", map[string]any{"box": "p-9"}, "this session holds no box p-9"},
		{"release", map[string]any{"box": "alpha"}, "this session holds no box alpha"},
		{"read_file", map[string]any{"box": "p-1", "path": "../../etc/passwd"}, "leaves /data/home/agent"},
		{"read_file", map[string]any{"box": "p-1", "path": "/etc/passwd"}, "give it relative to /data/home/agent"},
		{"read_file", map[string]any{"box": "p-1", "path": "a/../.."}, "leaves /data/home/agent"},
		{"read_file", map[string]any{"box": "p-1", "path": ""}, "a file's path under /data/home/agent is needed"},
		{"read_file", map[string]any{"box": "p-1", "path": "two\nlines"}, "with no NUL or newline"},
		{"read_file", map[string]any{"box": "p-1", "path": "x", "max_bytes": MaxRead + 1}, "max_bytes 1048577: want 1 to 1048576"},
		{"write_file", map[string]any{"box": "p-1", "path": ".", "content": "x"}, "leaves /data/home/agent"},
		{"write_file", map[string]any{"box": "p-1", "path": "big", "content": strings.Repeat("x", MaxWrite+1)}, "content: at most 65536 bytes"},
		{"write_file", map[string]any{"box": "p-1", "path": "bin", "content": "a\x00b"}, "with no NUL"},
		{"exec", map[string]any{"box": "p-2", "command": []string{"id"}}, "does not hold"},
	} {
		if msg := toolError(t, cs, tc.tool, tc.args); !strings.Contains(msg, tc.want) {
			t.Errorf("%s %v: got %q, want %q", tc.tool, tc.args, msg, tc.want)
		}
	}
	if got := f.commands(); len(got) != before {
		t.Errorf("bad arguments ran %q", got[before:])
	}
}

// A lease that has ended is not this session's any more: its box may be
// someone else's, so exec, the file tools and renew refuse it.
func TestEndedLeaseIsRefused(t *testing.T) {
	f := &fakePool{}
	cs, _ := leaseSession(t, f)
	if res := call(t, cs, "lease", map[string]any{"pool": "p", "holder": "short"}); res.IsError {
		t.Fatalf("lease: %s", text(res))
	}
	before := len(f.commands())
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"exec", map[string]any{"box": "p-1", "command": []string{"id"}}},
		{"read_file", map[string]any{"box": "p-1", "path": "x"}},
		{"write_file", map[string]any{"box": "p-1", "path": "x", "content": "y"}},
		{"renew", map[string]any{"box": "p-1"}},
		{"logs", map[string]any{"box": "p-1"}},
	} {
		if msg := toolError(t, cs, tc.tool, tc.args); !strings.Contains(msg, "this session's lease of p-1 ended at 2000-01-01T00:00:00Z") {
			t.Errorf("%s: %q", tc.tool, msg)
		}
	}
	if got := f.commands(); len(got) != before {
		t.Errorf("an ended lease ran %q", got[before:])
	}
}
