package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermes-box/boxes/mcpserver"
)

// TestIntegrationMCP drives boxes mcp's tools with the SDK's own client
// against a real box. Real engine: exec, doctor and logs through the tools
// run in, and read from, the box's containers.
func TestIntegrationMCP(t *testing.T) {
	image, _ := startWithItBoxes(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nboxes:\n  it-alpha: {}\n")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}

	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	if _, err := mcpserver.New(inProcess(DefaultConnectors()), filepath.Join(dir, "boxes.yaml"), "test").Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := mcpCaller(t, cs)

	res, out := call("exec", map[string]any{"box": "it-alpha", "command": []string{"sh", "-c", "id -un; pwd; echo oops >&2; exit 7"}})
	var r mcpserver.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil || res.IsError {
		t.Fatalf("exec: %v %v %s", err, res.IsError, out)
	}
	if r.ExitCode != 7 || r.Stdout != "agent\n/data/home/agent\n" || !strings.Contains(r.Stderr, "oops") {
		t.Errorf("exec result %+v", r)
	}

	if res, out := call("list_boxes", nil); res.IsError || !strings.Contains(out, `"it-alpha"`) || !strings.Contains(out, `"running"`) {
		t.Errorf("list_boxes: %v %s", res.IsError, out)
	}
	if res, out := call("plan", nil); res.IsError || !strings.Contains(out, `"no-op"`) {
		t.Errorf("plan: %v %s", res.IsError, out)
	}
	if res, out := call("doctor", map[string]any{"box": "it-alpha"}); res.IsError || !strings.Contains(out, `"exit_code":0`) {
		t.Errorf("doctor: %v %s", res.IsError, out)
	}
	if res, _ := call("logs", map[string]any{"box": "it-alpha", "service": "executor", "tail": 5}); res.IsError {
		t.Errorf("logs: tool error")
	}
	if res, out := call("exec", map[string]any{"box": "it-nobox", "command": []string{"true"}}); !res.IsError {
		t.Errorf("exec in an undeclared box: %s", out)
	}
}

// mcpCaller calls session cs's tools: the result and its text; an error of
// the protocol fails the test.
func mcpCaller(t *testing.T, cs *mcp.ClientSession) func(name string, args map[string]any) (*mcp.CallToolResult, string) {
	return func(name string, args map[string]any) (*mcp.CallToolResult, string) {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res, res.Content[0].(*mcp.TextContent).Text
	}
}
