// Package mcpserver serves boxes to a coding agent on this machine over MCP:
// list the boxes, show the plan, run a command in a box, read its logs and
// doctor it. Each tool is one boxes command line run in-process with --json
// where the command has it, so an agent sees exactly what a person sees, and
// nothing that changes or deletes a box is reachable from here.
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Runner runs one boxes command line (without the program name) with the
// given output streams and returns its exit code.
type Runner func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// MaxOutput bounds what one tool call returns of each stream; more is cut
// and the cut is said.
const MaxOutput = 1 << 20

// Tools are the names of the tools the server offers, all of them read-only
// or confined to a box's agent container.
var Tools = []string{"list_boxes", "plan", "exec", "logs", "doctor"}

// New returns the read-only server. file is the boxes.yaml every command
// reads.
func New(run Runner, file, version string) *mcp.Server {
	s, _ := NewWith(run, file, version, Options{})
	return s
}

// Options choose what the server offers beyond the read-only tools.
type Options struct {
	// AllowLease adds the lease tools (LeaseTools): the session leases pool
	// boxes, works in those it holds, and gives them back.
	AllowLease bool
}

// NewWith returns the server with o's tools, and the end of its session:
// called once the session is over (its input closed, or a signal), it
// releases every pool box the session still holds.
func NewWith(run Runner, file, version string, o Options) (*mcp.Server, func(context.Context) error) {
	instructions := "boxes keeps agent boxes on Docker as boxes.yaml declares them. " +
		"These tools read the fleet and run commands inside a box's agent container; " +
		"changing the fleet is done by a person with boxes plan and boxes apply."
	if o.AllowLease {
		instructions += " lease claims a box of a pool for this session; exec, read_file and write_file " +
			"then work in it, and release (or the end of the session) resets it and gives it back."
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "boxes", Version: version}, &mcp.ServerOptions{Instructions: instructions})
	t := &tools{run: run, file: file, held: map[string]held{}}
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(s, &mcp.Tool{
		Name:        "list_boxes",
		Description: "Every box of boxes.yaml: host, state, image current or stale, executor URL (never the token), last backup. JSON, as boxes ls --json prints it.",
		Annotations: readOnly,
	}, t.listBoxes)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "plan",
		Description: "What boxes apply would do to each box and why, as boxes plan --json prints it. Shows; never applies.",
		Annotations: readOnly,
	}, t.plan)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "exec",
		Description: "Run a command in a box's agent container as the user agent, from its home, with no standard input, for at most timeout_seconds (exit code 124 when stopped). Returns its exit code, standard output and standard error (each cut at 1 MiB). A pool's box only while this session holds it.",
		Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(false)},
	}, t.exec)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "logs",
		Description: "The last lines of a box container's logs (service agent or executor).",
		Annotations: readOnly,
	}, t.logs)
	mcp.AddTool(s, &mcp.Tool{
		Name:        "doctor",
		Description: "Check a box: both containers up, images match the lock, the agent publishes nothing, the executor answers MCP with its token, and hb doctor inside. JSON, as boxes doctor --json prints it.",
		Annotations: readOnly,
	}, t.doctor)
	if o.AllowLease {
		t.addLeaseTools(s)
	}
	return s, t.end
}

func ptr[T any](v T) *T { return &v }

type tools struct {
	run  Runner
	file string

	mu sync.Mutex
	// held are the pool boxes this session leased and has not released.
	held map[string]held
}

// Result is what every tool returns: the command's exit code and output.
type Result struct {
	ExitCode int    `json:"exit_code"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr,omitempty"`
}

// invoke runs boxes with args. A command that fails is a tool error carrying
// its message, so the agent reads why; exec's own exit code is not a failure.
func (t *tools) invoke(ctx context.Context, args []string, exitIsResult bool) (*mcp.CallToolResult, Result, error) {
	full := append([]string{"-f", t.file}, args...)
	var out, errb limitedBuffer
	code := t.run(ctx, full, &out, &errb)
	res := Result{ExitCode: code, Stdout: out.String(), Stderr: errb.String()}
	if code != 0 && !exitIsResult {
		msg := res.Stderr
		if msg == "" {
			msg = fmt.Sprintf("boxes %v exited with %d", args, code)
		}
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}, res, nil
	}
	text := res.Stdout
	if exitIsResult {
		b, _ := json.Marshal(res) // strings and an int always marshal
		text = string(b)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, res, nil
}

// ListInput selects the boxes to list.
type ListInput struct {
	All bool `json:"all,omitempty" jsonschema:"also the boxes of other fleets on the engines"`
}

func (t *tools) listBoxes(ctx context.Context, _ *mcp.CallToolRequest, in ListInput) (*mcp.CallToolResult, Result, error) {
	args := []string{"ls", "--json"}
	if in.All {
		args = append(args, "--all")
	}
	return t.invoke(ctx, args, false)
}

// PlanInput limits a plan.
type PlanInput struct {
	Target []string `json:"target,omitempty" jsonschema:"plan only these boxes"`
}

func (t *tools) plan(ctx context.Context, _ *mcp.CallToolRequest, in PlanInput) (*mcp.CallToolResult, Result, error) {
	args := []string{"plan", "--json"}
	for _, n := range in.Target {
		if err := boxName(n); err != nil {
			return nil, Result{}, err
		}
		args = append(args, "--target", n)
	}
	return t.invoke(ctx, args, false)
}

// ExecInput is a command for a box.
type ExecInput struct {
	Box     string   `json:"box" jsonschema:"the box's name"`
	Command []string `json:"command" jsonschema:"the program and its arguments, e.g. [\"sh\", \"-c\", \"ls ~\"]"`
	Timeout int      `json:"timeout_seconds,omitempty" jsonschema:"stop the command after this many seconds (default 600, at most 3600)"`
}

// The bounds of exec's time.
const (
	DefaultExecTimeout = 600
	MaxExecTimeout     = 3600
)

func (t *tools) exec(ctx context.Context, _ *mcp.CallToolRequest, in ExecInput) (*mcp.CallToolResult, Result, error) {
	if err := boxName(in.Box); err != nil {
		return nil, Result{}, err
	}
	if len(in.Command) == 0 {
		return nil, Result{}, errors.New("exec needs a command")
	}
	confine, err := t.confinement(in.Box)
	if err != nil {
		return nil, Result{}, err
	}
	timeout := in.Timeout
	switch {
	case timeout == 0:
		timeout = DefaultExecTimeout
	case timeout < 0 || timeout > MaxExecTimeout:
		return nil, Result{}, fmt.Errorf("timeout_seconds %d: want 1 to %d", timeout, MaxExecTimeout)
	}
	// coreutils' timeout stops the command in the box (exit code 124); the
	// deadline here is the backstop should the box not answer.
	ctx, cancel := context.WithTimeout(ctx, time.Duration(timeout+30)*time.Second)
	defer cancel()
	args := append([]string{"exec", in.Box}, confine...)
	args = append(append(args, "--", "timeout", "-k", "5", strconv.Itoa(timeout)), in.Command...)
	res, out, err := t.invoke(ctx, args, true)
	if ctx.Err() == context.DeadlineExceeded {
		return nil, out, fmt.Errorf("the box did not answer within %d seconds", timeout+30)
	}
	return boxesFailed(res, out, err)
}

// boxesFailed makes a failure of boxes itself (no such box, box not
// running, a box refused) a tool error, so that it is not read as the exit
// code of what it ran.
func boxesFailed(res *mcp.CallToolResult, out Result, err error) (*mcp.CallToolResult, Result, error) {
	if err == nil && out.ExitCode != 0 && (strings.HasPrefix(out.Stderr, "boxes: error: ") || strings.Contains(out.Stderr, "\nboxes: error: ")) {
		res.IsError = true
	}
	return res, out, err
}

// LogsInput picks a container's logs.
type LogsInput struct {
	Box     string `json:"box" jsonschema:"the box's name"`
	Service string `json:"service,omitempty" jsonschema:"agent (default) or executor"`
	Tail    int    `json:"tail,omitempty" jsonschema:"how many of the last lines (default 200)"`
}

func (t *tools) logs(ctx context.Context, _ *mcp.CallToolRequest, in LogsInput) (*mcp.CallToolResult, Result, error) {
	if err := boxName(in.Box); err != nil {
		return nil, Result{}, err
	}
	confine, err := t.confinement(in.Box)
	if err != nil {
		return nil, Result{}, err
	}
	service := in.Service
	switch service {
	case "":
		service = "agent"
	case "agent", "executor":
	default:
		return nil, Result{}, fmt.Errorf("service %q: want agent or executor", service)
	}
	tail := in.Tail
	if tail <= 0 {
		tail = 200
	}
	return t.invoke(ctx, append([]string{"logs", in.Box, service, "-n", strconv.Itoa(tail)}, confine...), false)
}

// DoctorInput names the box to check.
type DoctorInput struct {
	Box string `json:"box" jsonschema:"the box's name"`
}

func (t *tools) doctor(ctx context.Context, _ *mcp.CallToolRequest, in DoctorInput) (*mcp.CallToolResult, Result, error) {
	if err := boxName(in.Box); err != nil {
		return nil, Result{}, err
	}
	confine, err := t.confinement(in.Box)
	if err != nil {
		return nil, Result{}, err
	}
	// doctor exits 1 when it finds a problem; its report is still the answer.
	return boxesFailed(t.invoke(ctx, append([]string{"doctor", in.Box, "--json"}, confine...), true))
}

// boxName refuses what cannot be a box name, above all anything that would
// read as a flag.
func boxName(name string) error {
	if name == "" {
		return errors.New("a box name is needed")
	}
	for i, r := range name {
		ok := r >= 'a' && r <= 'z' || i > 0 && (r >= '0' && r <= '9' || r == '-')
		if !ok {
			return fmt.Errorf("%q is not a box name (lowercase letters, digits and -, starting with a letter)", name)
		}
	}
	return nil
}

// limitedBuffer keeps the first MaxOutput bytes written to it.
type limitedBuffer struct {
	buf bytes.Buffer
	cut int64
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	room := MaxOutput - b.buf.Len()
	if room < len(p) {
		if room > 0 {
			b.buf.Write(p[:room])
		}
		b.cut += int64(len(p) - max(room, 0))
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *limitedBuffer) String() string {
	if b.cut > 0 {
		return b.buf.String() + fmt.Sprintf("\n[%d more bytes not shown]", b.cut)
	}
	return b.buf.String()
}

// Serve runs s over in and out (standard input and output) until ctx ends
// or the client leaves.
func Serve(ctx context.Context, s *mcp.Server, in io.Reader, out io.Writer) error {
	return s.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}})
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
