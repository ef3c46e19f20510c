package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/internal/hint"
)

// ReadyTimeout bounds how long WaitReady waits for a box's Executor.
var ReadyTimeout = 90 * time.Second

// WaitReady returns once box's Executor answers an authenticated MCP
// initialize on its published port, with where a person on this machine
// reaches it: its URL, or for a port on a remote's loopback how it is
// reached (see Reach.Where). On a remote host it asks at the host's
// address, or from inside the box where this machine cannot reach the port
// (see remoteProbe).
func (e *Engine) WaitReady(ctx context.Context, box, token string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	var last error
	for try := 0; ; try++ {
		url, err := e.probe(ctx, box, token)
		if err == nil {
			return url, nil
		}
		if engineGone(err) {
			// An engine gone does not come back within a wait.
			return "", e.lost(err)
		}
		var down *downError
		if errors.As(err, &down) {
			return "", fmt.Errorf("executor of %s: %w", box, err)
		}
		last = err
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("executor of %s not ready after %s: %w", box, ReadyTimeout, last)
		case <-time.After(PollAfter(try)):
		}
	}
}

func (e *Engine) probe(ctx context.Context, box, token string) (string, error) {
	c, err := e.executorContainer(ctx, box)
	if err != nil {
		return "", err
	}
	switch c.State {
	case "running":
	case "restarting", "exited", "dead":
		// Its process has ended: waiting longer cannot help.
		return "", &downError{state: c.State, logs: e.lastLogLines(ctx, c.ID, 3)}
	default:
		return "", fmt.Errorf("executor container is %s", c.State)
	}
	hostIP, port := publishedAt(c)
	if port == 0 {
		// Behind the executor's door, the gate publishes its port and
		// relays it: the probe goes through the relay.
		if g, err := e.ServiceContainer(ctx, box, compose.GateService); err == nil {
			hostIP, port = publishedAt(g)
		}
	}
	if port == 0 {
		return "", fmt.Errorf("executor publishes no port")
	}
	return e.remoteProbe(ctx, box, c, hostIP, int(port), token)
}

// publishedAt is where container c publishes the executor's port; port 0
// when it does not.
func publishedAt(c container.Summary) (string, uint16) {
	for _, p := range c.Ports {
		if int(p.PrivatePort) == compose.ExecutorPort && p.PublicPort != 0 {
			return p.IP, p.PublicPort
		}
	}
	return "", 0
}

func (e *Engine) executorContainer(ctx context.Context, box string) (container.Summary, error) {
	return e.ServiceContainer(ctx, box, compose.ExecutorService)
}

// ServiceContainer is box's one container of service, running or not.
func (e *Engine) ServiceContainer(ctx context.Context, box, service string) (container.Summary, error) {
	cs, err := e.api.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(
		filters.Arg("label", compose.ManagedLabel+"=1"),
		filters.Arg("label", compose.BoxLabel+"="+box),
		filters.Arg("label", "com.docker.compose.service="+service),
	)})
	if err != nil {
		return container.Summary{}, e.lost(err)
	}
	if len(cs) == 0 {
		return container.Summary{}, fmt.Errorf("found 0 %s containers of box %s: %w", service, box, errNoContainer)
	}
	if len(cs) != 1 {
		return container.Summary{}, fmt.Errorf("found %d %s containers of box %s", len(cs), service, box)
	}
	return cs[0], nil
}

// errNoContainer marks a box without a container of the service asked for.
var errNoContainer = errors.New("no such container")

// downError is a container whose process has ended, with its last words.
type downError struct {
	state string
	logs  string
}

func (e *downError) Error() string {
	if e.logs == "" {
		return "the container is " + e.state
	}
	return fmt.Sprintf("the container is %s; its last log lines: %s", e.state, e.logs)
}

// lastLogLines is the last n lines container id printed, on one line; "" if
// they cannot be read.
func (e *Engine) lastLogLines(ctx context.Context, id string, n int) string {
	var out bytes.Buffer
	if err := e.Logs(ctx, id, engine.LogOptions{Tail: strconv.Itoa(n)}, &out, &out); err != nil {
		return ""
	}
	var lines []string
	for _, l := range strings.Split(out.String(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, " | ")
}

// ContainerID is the ID of box's one container of service, running or not.
func (e *Engine) ContainerID(ctx context.Context, box, service string) (string, error) {
	c, err := e.ServiceContainer(ctx, box, service)
	return c.ID, err
}

// WaitInit returns once box's agent container runs and hb init has
// finished in it (hb health agent passes), and its gate answers (boxes gate
// --health); the two are checked side by side. A container that exits,
// restarts or is restarted meanwhile fails at once with its last log lines:
// a container whose hb init fails restarts forever, and waiting cannot help.
// Of two failures, the agent's is the one returned.
//
// Once both answer, the agent trusts the gate's authority (hb trust): the
// gate made one when it started, and the agent asks for it only once the
// gate answers, not while it starts beside it. That is best effort: an
// image whose hb has no trust fails it, and the agent's healthcheck trusts
// the gate's authority within its interval anyway.
func (e *Engine) WaitInit(ctx context.Context, box string) error {
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	gate := make(chan error, 1)
	go func() { gate <- e.waitGate(ctx, box) }()
	agent := e.waitService(ctx, box, compose.AgentService, "root", []string{hb.Path, "health", compose.AgentService}, "hb init")
	if agent != nil {
		cancel()
		<-gate
		return agent
	}
	if err := <-gate; err != nil {
		return err
	}
	if c, err := e.ServiceContainer(ctx, box, compose.AgentService); err == nil {
		_, _ = e.Run(ctx, c.ID, "root", []string{hb.Path, "trust", "--wait", "5"}, io.Discard, io.Discard)
	}
	return nil
}

// waitGate returns once box's gate answers. A box without a gate is one put
// back on its containers from before the network door, when its recreate
// failed: there is no gate to wait for.
func (e *Engine) waitGate(ctx context.Context, box string) error {
	err := e.waitService(ctx, box, compose.GateService, "", []string{compose.GateBinary, "gate", "--health"}, "the gate")
	if errors.Is(err, errNoContainer) {
		return nil
	}
	return err
}

// waitService returns once box's container of service runs and check,
// run in it as user ("" the container's own), exits 0; what names what
// is waited for in a timeout's message.
func (e *Engine) waitService(ctx context.Context, box, service, user string, check []string, what string) error {
	c, err := e.ServiceContainer(ctx, box, service)
	if err != nil {
		return err
	}
	restarts := -1
	last := "it has not started"
	for try := 0; ; try++ {
		info, err := e.api.ContainerInspect(ctx, c.ID)
		if err != nil {
			return fmt.Errorf("%s of %s: %w", service, box, err)
		}
		s := info.State
		if restarts < 0 {
			restarts = info.RestartCount
		}
		switch {
		case s.Restarting || info.RestartCount > restarts:
			return explainDown(fmt.Errorf("%s of %s: %w", service, box, &downError{state: withExit("restarting", s.ExitCode), logs: e.lastLogLines(ctx, c.ID, 3)}))
		case s.Status == "exited" || s.Status == "dead":
			return explainDown(fmt.Errorf("%s of %s: %w", service, box, &downError{state: withExit(s.Status, s.ExitCode), logs: e.lastLogLines(ctx, c.ID, 3)}))
		case s.Running && !s.Paused:
			var stderr bytes.Buffer
			code, err := e.Run(ctx, c.ID, user, check, nil, &stderr)
			switch {
			case err == nil && code == 0:
				return nil
			case err != nil:
				// The container may have stopped under the exec: look again.
				last = err.Error()
			default:
				last = strings.TrimSpace(stderr.String())
				if refusesStatx(last) {
					return hint.Wrap(fmt.Errorf("%s of %s: %s cannot check the box: %s", service, box, what, last), statxHint)
				}
			}
		default:
			last = "the container is " + s.Status
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return explainDown(fmt.Errorf("%s of %s: %s not ready after %s: %s; its last log lines: %s", service, box, what, ReadyTimeout, last, e.lastLogLines(context.WithoutCancel(ctx), c.ID, 3)))
			}
			return ctx.Err()
		case <-time.After(PollAfter(try)):
		}
	}
}

// withExit is a container state with its last exit code, when it has one
// (a container between two restarts reports 0).
func withExit(state string, code int) string {
	if code == 0 {
		return state
	}
	return fmt.Sprintf("%s (exit %d)", state, code)
}

// PollAfter is how long a wait for a box's readiness sleeps after its
// try-th look (from 0): 25 ms, doubling up to 200 ms. A box is most often
// ready within a few hundred milliseconds of its start, and a look at a
// fixed 200 ms added 100 ms to every wait on average; after the first
// second it looks five times a second, as before.
func PollAfter(try int) time.Duration {
	const first, most = 25 * time.Millisecond, 200 * time.Millisecond
	if try >= 3 {
		return most
	}
	return first << try
}
