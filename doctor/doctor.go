// Package doctor checks one box from the host (containers, image, ports, the
// MCP handshake) and from inside (hb doctor), and returns a report for the
// command line to print.
package doctor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/mcp"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/statedir"
)

// Report is every check of one box; OK when none is an error.
type Report struct {
	Box string `json:"box"`
	OK  bool   `json:"ok"`
	// Runtime is the OCI runtime the agent container runs under, as the
	// engine reports it (runc, runsc for gVisor); "" when not read.
	Runtime string     `json:"runtime,omitempty"`
	Checks  []hb.Check `json:"checks"`
}

func (r *Report) add(where, name, severity, format string, args ...any) {
	r.Checks = append(r.Checks, hb.Check{Where: where, Name: name, OK: severity != "error", Severity: severity, Detail: fmt.Sprintf(format, args...)})
}

// Box is what doctor knows of a box before it probes anything.
type Box struct {
	Name string
	// Host is the box's host; "" is the local engine. The MCP handshake is
	// checked from this machine only for a local box.
	Host string
	// Resources are the box's labelled resources as observed.
	Resources engine.Resources
	// Image is the locked image ID ("" when the lock has none).
	Image string
	// Bind is the executor bind address boxes.yaml declares ("" if undeclared).
	Bind string
	// Token is the stored token; TokenErr why it could not be read.
	Token    string
	TokenErr error
	// Exposed are secret files or directories readable by others.
	Exposed []statedir.Exposure
	// Restoring is the box's restore that was cut short, if one was;
	// RestoringErr why its record could not be read.
	Restoring    *statedir.Restoring
	RestoringErr error
	// Stopped is a box boxes.yaml declares stopped: its containers stopped
	// are as they should be.
	Stopped bool
	// Runtime is the runtime: boxes.yaml declares; "" is the engine's default.
	Runtime string
	// Door is what the network door's checks need; nil skips them (a box
	// not declared here).
	Door *Door
}

// Probes are doctor's ways into the box; nil fields take the real ones.
type Probes struct {
	// Runner runs hb doctor in the agent container.
	Runner engine.Runner
	// Initialize is the MCP handshake (mcp.Initialize by default).
	Initialize func(ctx context.Context, url, token string) error
	// Runtime reads the OCI runtime a container runs under; nil leaves
	// the runtime unchecked.
	Runtime func(ctx context.Context, container string) (string, error)
	// Forward, when set, is how the box's executor is reached from here
	// on an engine that publishes no port (a cluster): a local port
	// forwarded to it (engine.BoxForwarder), checked instead of a
	// published port.
	Forward func(ctx context.Context) (engine.Forward, error)
}

// Check checks b.
func Check(ctx context.Context, b Box, p Probes) *Report {
	if p.Initialize == nil {
		p.Initialize = mcp.Initialize
	}
	rep := &Report{Box: b.Name}
	if b.RestoringErr != nil {
		rep.add("host", "restore", "error", "%v", b.RestoringErr)
	} else if r := b.Restoring; r != nil && r.From != "" {
		rep.add("host", "restore", "error", "fork incomplete: the box holds part of %s, since %s (boxes apply seeds it again)", reconcile.FromText(r.From), r.Since.Format(time.RFC3339))
	} else if r != nil {
		rep.add("host", "restore", "error", "restore incomplete: the box holds part of %s, since %s (boxes apply, or boxes load with the same archive, seeds it again)", r.Archive, r.Since.Format(time.RFC3339))
	}
	for _, e := range b.Exposed {
		rep.add("host", "secrets", "error", "%s (boxes apply restores it)", e)
	}
	agent, haveAgent := b.Resources.Container(compose.AgentService)
	executor, haveExecutor := b.Resources.Container(compose.ExecutorService)
	gate, haveGate := b.Resources.Container(compose.GateService)
	for _, c := range []struct {
		service string
		c       engine.Container
		ok      bool
	}{{compose.AgentService, agent, haveAgent}, {compose.ExecutorService, executor, haveExecutor}, {compose.GateService, gate, haveGate}} {
		switch {
		case !c.ok:
			rep.add("host", c.service+" container", "error", "missing (boxes apply recreates it)")
		case b.Stopped && (c.c.State == engine.Exited || c.c.State == engine.Created):
			rep.add("host", c.service+" container", "ok", "stopped, as boxes.yaml declares, %s", c.c.Name)
		case c.c.State != engine.Running:
			rep.add("host", c.service+" container", "error", "%s (boxes start %s)", c.c.State, b.Name)
		default:
			rep.add("host", c.service+" container", "ok", "running, %s", c.c.Name)
		}
		if c.ok {
			checkImage(rep, b.Image, c.service, c.c)
		}
	}
	if haveGate && b.Door != nil {
		checkMachine(rep, gate, *b.Door)
	}
	if haveAgent && p.Runtime != nil {
		checkRuntime(ctx, rep, b, agent, p.Runtime)
	}
	if haveAgent {
		if published := publishedPorts(agent); published != "" {
			rep.add("host", "agent publishes nothing", "error", "publishes %s", published)
		} else {
			rep.add("host", "agent publishes nothing", "ok", "no port")
		}
	}
	if haveExecutor && executor.State == engine.Running {
		// Behind the executor's door, the gate publishes its port.
		publisher := executor
		if _, ok := executor.Published(compose.ExecutorPort); !ok && haveGate {
			if _, ok := gate.Published(compose.ExecutorPort); ok {
				publisher = gate
			}
		}
		if p.Forward != nil {
			checkForwardedExecutor(ctx, rep, b, executor, p)
		} else {
			checkExecutorPort(ctx, rep, b, publisher, p.Initialize)
		}
	}
	if haveAgent && agent.State == engine.Running && p.Runner != nil {
		rep.Checks = append(rep.Checks, hb.Doctor(ctx, p.Runner, agent.ID)...)
		if b.Door != nil && haveGate {
			rep.Checks = append(rep.Checks, checkDoor(ctx, p.Runner, agent.ID, *b.Door)...)
		}
		if b.Door != nil && b.Door.Executor != nil && haveGate && haveExecutor && executor.State == engine.Running {
			rep.Checks = append(rep.Checks, checkExecutorDoor(ctx, p.Runner, executor.ID, *b.Door.Executor)...)
		}
	} else if haveAgent && b.Stopped {
		rep.add("box", "checks inside the box", "warn", "not run: the box is stopped, as declared (boxes start %s, then boxes doctor %s, runs them)", b.Name, b.Name)
	}
	rep.OK = true
	for _, c := range rep.Checks {
		rep.OK = rep.OK && c.OK
	}
	return rep
}

func checkImage(rep *Report, want, service string, c engine.Container) {
	switch {
	case want == "":
		rep.add("host", service+" image", "warn", "boxes.lock has no image to compare with")
	case c.Image != want:
		rep.add("host", service+" image", "error", "runs %s, boxes.lock has %s (boxes apply recreates it)", reconcile.ShortID(c.Image), reconcile.ShortID(want))
	default:
		rep.add("host", service+" image", "ok", "the lock's %s", reconcile.ShortID(want))
	}
}

// checkRuntime reports the runtime the agent runs under, and fails when it
// is not the one boxes.yaml declares (an edit not applied yet).
func checkRuntime(ctx context.Context, rep *Report, b Box, c engine.Container, read func(context.Context, string) (string, error)) {
	got, err := read(ctx, c.ID)
	switch {
	case err != nil:
		rep.add("host", "agent runtime", "warn", "not read: %v", err)
	case b.Runtime == "":
		rep.Runtime = got
		rep.add("host", "agent runtime", "ok", "%s, the engine's default (boxes.yaml names no runtime:)", describeRuntime(got))
	case got != b.Runtime:
		rep.Runtime = got
		rep.add("host", "agent runtime", "error", "runs under %s, boxes.yaml says runtime: %s (boxes apply recreates it)", describeRuntime(got), b.Runtime)
	default:
		rep.Runtime = got
		rep.add("host", "agent runtime", "ok", "%s, as boxes.yaml says", describeRuntime(got))
	}
}

// describeRuntime is a runtime's name, with what it is when boxes knows.
func describeRuntime(name string) string {
	if name == "runsc" {
		return "runsc (gVisor)"
	}
	return name
}

func publishedPorts(c engine.Container) string {
	var b bytes.Buffer
	for _, p := range c.Ports {
		if p.HostPort != 0 {
			fmt.Fprintf(&b, "%s:%d->%d ", p.HostIP, p.HostPort, p.ContainerPort)
		}
	}
	return string(bytes.TrimSpace(b.Bytes()))
}

// checkExecutorPort checks the executor is published where boxes.yaml says
// and speaks MCP there: 200 and a protocol version with the token, 401 without.
func checkExecutorPort(ctx context.Context, rep *Report, b Box, c engine.Container, initialize func(context.Context, string, string) error) {
	port, ok := c.Published(compose.ExecutorPort)
	if !ok {
		rep.add("host", "executor port", "error", "%d is not published", compose.ExecutorPort)
		return
	}
	detail := port.HostIP + ":" + strconv.Itoa(port.HostPort)
	if b.Bind != "" && b.Bind != port.HostIP {
		rep.add("host", "executor port", "error", "published on %s, boxes.yaml says %s (boxes plan shows the recreate)", detail, b.Bind)
	} else if c.Service == compose.GateService {
		rep.add("host", "executor port", "ok", "published on %s by the gate, which relays it (the executor's door)", detail)
	} else {
		rep.add("host", "executor port", "ok", "published on %s", detail)
	}
	if b.Host != "" {
		// A remote host's published address need not be reachable from
		// here; the in-box handshake covers the Executor.
		rep.add("host", "mcp handshake", "warn", "box on host %s: checked from inside the box only", b.Host)
		return
	}
	checkMCP(ctx, rep, b, reconcile.ExecutorURL(port.HostIP, port.HostPort)+"/mcp", initialize)
}

// checkForwardedExecutor checks executor c, which publishes no port, through
// the local port p.Forward opens to it: it speaks MCP there, with the token
// and refusing without it.
func checkForwardedExecutor(ctx context.Context, rep *Report, b Box, c engine.Container, p Probes) {
	if published := publishedPorts(c); published != "" {
		rep.add("host", "executor publishes nothing", "error", "published on %s, where the engine publishes none", published)
	}
	f, err := p.Forward(ctx)
	if err != nil {
		rep.add("host", "executor port", "error", "not reached through the engine's forward: %v", err)
		return
	}
	defer f.Close()
	rep.add("host", "executor port", "ok", "no port published; reached through a port the engine forwards to it (as boxes open %s does)", b.Name)
	checkMCP(ctx, rep, b, f.URL()+"/mcp", p.Initialize)
}

// checkMCP checks the executor at url speaks MCP: 200 and a protocol
// version with the token, 401 without.
func checkMCP(ctx context.Context, rep *Report, b Box, url string, initialize func(context.Context, string, string) error) {
	switch {
	case b.TokenErr != nil:
		rep.add("host", "mcp with token", "error", "reading the token: %v", b.TokenErr)
	case b.Token == "":
		rep.add("host", "mcp with token", "error", "no token in .boxes/secrets (boxes plan recovers it from the box)")
	default:
		if err := initialize(ctx, url, b.Token); err != nil {
			rep.add("host", "mcp with token", "error", "initialize at %s: %v", url, err)
		} else {
			rep.add("host", "mcp with token", "ok", "initialize at %s answered with a protocol version", url)
		}
	}
	var status *mcp.StatusError
	err := initialize(ctx, url, "")
	switch {
	case errors.As(err, &status) && status.Code == http.StatusUnauthorized:
		rep.add("host", "mcp without token", "ok", "refused with 401")
	case err == nil:
		rep.add("host", "mcp without token", "error", "answered without a token")
	default:
		rep.add("host", "mcp without token", "error", "want 401, got: %v", err)
	}
}
