package engines

import (
	"context"
	"fmt"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/handoff"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/workspace"
)

// Dashboard is a box's Executor dashboard as this machine reaches it.
type Dashboard struct {
	// URL is the executor's address from here; Via says how it is reached
	// when that is not directly (", forwarded over ssh to … on host …").
	URL, Via string
	// Token signs the browser in; it is never printed.
	Token string
	// Browser is the command that opens the dashboard.
	Browser []string
	// Forward is the ssh forward URL goes through, nil when the executor
	// is reached directly. Close ends it.
	Forward *docker.Forward
}

// Close ends the forward, if any.
func (d *Dashboard) Close() {
	if d.Forward != nil {
		_ = d.Forward.Close()
	}
}

// OpenDashboard finds box name's running executor, its token and the
// browser, and how this machine reaches the executor: directly, or, where
// it is bound to the loopback of a host reached over ssh://, through a
// local port forwarded over ssh that stays open until Close.
func OpenDashboard(ctx context.Context, ws *workspace.Workspace, name string) (*Dashboard, error) {
	e, c, err := BoxContainer(ctx, ws, name, compose.ExecutorService, true, "")
	if err != nil {
		return nil, err
	}
	port, ok := c.Published(compose.ExecutorPort)
	if !ok {
		return nil, hint.Wrap(fmt.Errorf("box %s: the executor publishes no port", name), "boxes doctor %s", name)
	}
	token, ok, err := ws.Tokens.Get(name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("box %s: %w", name, reconcile.ErrNoToken)
	}
	browser, err := handoff.Browser()
	if err != nil {
		return nil, err
	}
	d := &Dashboard{Token: token, Browser: browser}
	reach := e.Reach(port.HostIP, port.HostPort)
	switch reach.How {
	case docker.ReachSSHForward:
		fwd, err := e.Forward(ctx, port.HostIP, port.HostPort)
		if err != nil {
			return nil, fmt.Errorf("box %s: forwarding a local port to its executor (%s): %w", name, reach.OnHost, err)
		}
		d.Forward = fwd
		d.URL, d.Via = fwd.URL, fmt.Sprintf(", forwarded over ssh to %s on host %s", reach.OnHost, e.Host)
	case docker.ReachHostOnly:
		return nil, hint.Wrap(fmt.Errorf("box %s: its executor is on host %s's loopback (%s), which only that machine reaches", name, e.Host, reach.OnHost),
			"bind it where this machine reaches it (executor: {bind: 0.0.0.0}), or reach host %s over ssh://, which open forwards a port over", e.Host)
	default:
		d.URL = reach.URL
	}
	return d, nil
}
