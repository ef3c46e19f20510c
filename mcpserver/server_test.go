package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeBoxes records each command line and answers as boxes would.
type fakeBoxes struct {
	calls [][]string
}

func (f *fakeBoxes) run(_ context.Context, args []string, stdout, stderr io.Writer) int {
	f.calls = append(f.calls, args)
	switch args[2] {
	case "ls":
		fmt.Fprint(stdout, `{"boxes":[{"name":"alpha"}]}`)
		return 0
	case "exec":
		fmt.Fprint(stdout, "hello\n")
		fmt.Fprint(stderr, "warn\n")
		return 3
	case "doctor":
		fmt.Fprint(stdout, `{"ok":false}`)
		return 1
	case "logs":
		fmt.Fprint(stderr, "boxes: error: no box named zed in boxes.yaml\n")
		return 1
	case "plan":
		fmt.Fprint(stdout, strings.Repeat("x", MaxOutput+10))
		return 0
	}
	return 1
}

func connect(t *testing.T, f *fakeBoxes) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	if _, err := New(f.run, "/w/boxes.yaml", "test").Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string { return res.Content[0].(*mcp.TextContent).Text }

func TestToolsAreTheReadOnlySet(t *testing.T) {
	cs := connect(t, &fakeBoxes{})
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	sort.Strings(names)
	want := append([]string(nil), Tools...)
	sort.Strings(want)
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	for _, n := range names {
		for _, bad := range []string{"apply", "rm", "delete", "stop", "start", "load", "save"} {
			if strings.Contains(n, bad) {
				t.Errorf("tool %s looks destructive", n)
			}
		}
	}
}

func TestCommandLines(t *testing.T) {
	f := &fakeBoxes{}
	cs := connect(t, f)
	if got := text(call(t, cs, "list_boxes", map[string]any{"all": true})); got != `{"boxes":[{"name":"alpha"}]}` {
		t.Errorf("list_boxes = %q", got)
	}
	res := call(t, cs, "exec", map[string]any{"box": "alpha", "command": []string{"sh", "-c", "echo hello; exit 3"}})
	if res.IsError {
		t.Errorf("exec with a non-zero exit is a result, not a tool error")
	}
	var r Result
	if err := json.Unmarshal([]byte(text(res)), &r); err != nil {
		t.Fatal(err)
	}
	if r != (Result{ExitCode: 3, Stdout: "hello\n", Stderr: "warn\n"}) {
		t.Errorf("exec result %+v", r)
	}
	if res := call(t, cs, "doctor", map[string]any{"box": "alpha"}); res.IsError || !strings.Contains(text(res), `"exit_code":1`) {
		t.Errorf("doctor: %v %q", res.IsError, text(res))
	}
	if res := call(t, cs, "logs", map[string]any{"box": "zed"}); !res.IsError || !strings.Contains(text(res), "no box named zed") {
		t.Errorf("logs of a missing box: %v %q", res.IsError, text(res))
	}
	want := [][]string{
		{"-f", "/w/boxes.yaml", "ls", "--json", "--all"},
		// A box this session does not hold: never one that is or was a pool's.
		{"-f", "/w/boxes.yaml", "exec", "alpha", "--no-pool", "--", "timeout", "-k", "5", "600", "sh", "-c", "echo hello; exit 3"},
		{"-f", "/w/boxes.yaml", "doctor", "alpha", "--json", "--no-pool"},
		{"-f", "/w/boxes.yaml", "logs", "zed", "agent", "-n", "200", "--no-pool"},
	}
	if !reflect.DeepEqual(f.calls, want) {
		t.Errorf("command lines\n got %q\nwant %q", f.calls, want)
	}
}

func TestOutputIsBounded(t *testing.T) {
	cs := connect(t, &fakeBoxes{})
	got := text(call(t, cs, "plan", nil))
	if len(got) > MaxOutput+100 || !strings.HasSuffix(got, "[10 more bytes not shown]") {
		t.Errorf("plan output: %d bytes, ends %q", len(got), got[len(got)-40:])
	}
}

func TestBadArgumentsRunNothing(t *testing.T) {
	f := &fakeBoxes{}
	cs := connect(t, f)
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"exec", map[string]any{"box": "--help", "command": []string{"id"}}, "not a box name"},
		{"exec", map[string]any{"box": "alpha", "command": []string{}}, "needs a command"},
		{"exec", map[string]any{"box": "alpha", "command": []string{"id"}, "timeout_seconds": 3601}, "want 1 to 3600"},
		{"logs", map[string]any{"box": "alpha", "service": "db"}, "want agent or executor"},
		{"doctor", map[string]any{"box": ""}, "box name is needed"},
		{"plan", map[string]any{"target": []string{"-f"}}, "not a box name"},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
		msg := ""
		switch {
		case err != nil:
			msg = err.Error()
		case res.IsError:
			msg = text(res)
		}
		if !strings.Contains(msg, tc.want) {
			t.Errorf("%s %v: got %q, want %q", tc.tool, tc.args, msg, tc.want)
		}
	}
	if len(f.calls) != 0 {
		t.Errorf("bad arguments ran %q", f.calls)
	}
}

func TestFailureOfBoxesIsAToolError(t *testing.T) {
	run := func(_ context.Context, _ []string, _, stderr io.Writer) int {
		fmt.Fprint(stderr, "boxes: error: box alpha has no agent container\n")
		return 1
	}
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	if _, err := New(run, "boxes.yaml", "test").Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res := call(t, cs, "exec", map[string]any{"box": "alpha", "command": []string{"true"}})
	if !res.IsError || !strings.Contains(text(res), "no agent container") {
		t.Errorf("got %v %q", res.IsError, text(res))
	}
	// doctor's exit code 1 is its report's; boxes's own failure (a box it
	// refuses) is not a report.
	if res := call(t, cs, "doctor", map[string]any{"box": "alpha"}); !res.IsError || !strings.Contains(text(res), "no agent container") {
		t.Errorf("doctor: got %v %q", res.IsError, text(res))
	}
}
