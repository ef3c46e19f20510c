package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/mcp"
	"github.com/hermes-box/boxes/reconcile"
)

// ReadyTimeout bounds how long WaitReady waits for a box's Executor.
var ReadyTimeout = 90 * time.Second

// WaitReady returns once box's Executor answers an authenticated MCP
// initialize on its published port. On a remote host it asks at the host's
// address, or from inside the box where this machine cannot reach the port
// (see remoteProbe).
func (e *Engine) WaitReady(ctx context.Context, box, token string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	var last error
	for {
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
		case <-time.After(200 * time.Millisecond):
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
	var hostIP string
	var port uint16
	for _, p := range c.Ports {
		if int(p.PrivatePort) == compose.ExecutorPort && p.PublicPort != 0 {
			hostIP, port = p.IP, p.PublicPort
			break
		}
	}
	if port == 0 {
		return "", fmt.Errorf("executor publishes no port")
	}
	if e.Host != "" {
		return e.remoteProbe(ctx, c, hostIP, int(port), token)
	}
	url := reconcile.ExecutorURL(hostIP, int(port))
	return url, mcp.Initialize(ctx, url+"/mcp", token)
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
		return container.Summary{}, err
	}
	if len(cs) != 1 {
		return container.Summary{}, fmt.Errorf("found %d %s containers of box %s", len(cs), service, box)
	}
	return cs[0], nil
}

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
	if err := e.Logs(ctx, id, LogOptions{Tail: strconv.Itoa(n)}, &out, &out); err != nil {
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
