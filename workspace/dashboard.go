package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/hermes-box/boxes/apply"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/handoff"
	"github.com/hermes-box/boxes/internal/hint"
)

// Dashboard is a box's Executor dashboard as this machine reaches it.
type Dashboard struct {
	Box string
	// URL is the executor's address from here; Via says how it is reached
	// when that is not directly (", forwarded over ssh to … on host …").
	URL, Via string
	// Token signs the browser in; it is never printed.
	Token string
	// Browser is the command that opens the dashboard.
	Browser []string
	// Forward is the forward URL goes through (over ssh, or through a
	// cluster's API server), nil when the executor is reached directly.
	// Close ends it.
	Forward engine.Forward
}

// Close ends the forward, if any.
func (d *Dashboard) Close() {
	if d.Forward != nil {
		_ = d.Forward.Close()
	}
}

// Browse hands the dashboard, signed in, to the browser, which has until
// timeout to fetch its one-time address; the browser's own messages go to stderr.
func (d *Dashboard) Browse(ctx context.Context, stderr io.Writer, timeout time.Duration) error {
	err := handoff.Open(ctx, d.URL+"/?token="+url.QueryEscape(d.Token), d.Browser, stderr, timeout)
	if errors.Is(err, handoff.ErrNotFetched) {
		return fmt.Errorf("box %s: %w within %s", d.Box, err, timeout)
	}
	return err
}

// WriteText writes what open did, once the browser has the dashboard.
func (d *Dashboard) WriteText(w io.Writer) {
	fmt.Fprintf(w, "opened the dashboard of %s (%s/%s) with %s, signed in through a one-time local address; the token was not printed\n", d.Box, d.URL, d.Via, d.Browser[0])
	if d.Forward != nil {
		fmt.Fprintln(w, "the forward stays open until Ctrl-C")
	}
}

// Wait keeps the forward open, for the dashboard keeps talking to the
// executor, until ctx ends; it fails if the forward ends first. With no
// forward it returns at once.
func (d *Dashboard) Wait(ctx context.Context) error {
	if d.Forward == nil {
		return nil
	}
	select {
	case <-ctx.Done():
		return nil
	case <-d.Forward.Done():
		return fmt.Errorf("box %s: the forward to its executor ended: %w", d.Box, d.Forward.Err())
	}
}

// OpenDashboard finds box name's running executor, its token and the
// browser, and how this machine reaches the executor: directly, or, where
// it is bound to the loopback of a host reached over ssh://, through a
// local port forwarded over ssh that stays open until Close.
func (w *Workspace) OpenDashboard(ctx context.Context, name string) (*Dashboard, error) {
	host, c, err := w.BoxContainer(ctx, name, compose.ExecutorService, true, "")
	if err != nil {
		return nil, err
	}
	e, err := w.Engine(ctx, host)
	if err != nil {
		return nil, err
	}
	if bf, ok := e.(engine.BoxForwarder); ok {
		// An executor that publishes no port: the engine forwards one
		// here to the box itself.
		return w.forwardedDashboard(ctx, name, bf)
	}
	port, ok := c.Published(compose.ExecutorPort)
	if !ok {
		// Behind the executor's door, the gate publishes its port.
		if _, g, err := w.BoxContainer(ctx, name, compose.GateService, true, ""); err == nil {
			port, ok = g.Published(compose.ExecutorPort)
		}
	}
	if !ok {
		return nil, hint.Wrap(fmt.Errorf("box %s: the executor publishes no port", name), "boxes doctor %s", name)
	}
	d, err := w.dashboard(name)
	if err != nil {
		return nil, err
	}
	reach := e.ExecutorReach(port.HostIP, port.HostPort)
	switch reach.How {
	case engine.ReachSSHForward:
		fwd, err := e.Forward(ctx, port.HostIP, port.HostPort)
		if err != nil {
			return nil, fmt.Errorf("box %s: forwarding a local port to its executor (%s): %w", name, reach.OnHost, err)
		}
		d.Forward = fwd
		d.URL, d.Via = fwd.URL(), fmt.Sprintf(", forwarded over ssh to %s on %s", reach.OnHost, engine.MachineName(host))
	case engine.ReachHostOnly:
		return nil, hint.Wrap(fmt.Errorf("box %s: its executor is on %s's loopback (%s), which only that machine reaches", name, engine.MachineName(host), reach.OnHost),
			"bind it where this machine reaches it (executor: {bind: 0.0.0.0}), or reach %s over ssh://, which open forwards a port over", engine.MachineName(host))
	default:
		d.URL = reach.URL
	}
	return d, nil
}

// dashboard is box name's dashboard before its address is known: its
// token and the browser.
func (w *Workspace) dashboard(name string) (*Dashboard, error) {
	token, ok, err := w.Tokens.Get(name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("box %s: %w", name, apply.ErrNoToken)
	}
	browser, err := handoff.Browser()
	if err != nil {
		return nil, err
	}
	return &Dashboard{Box: name, Token: token, Browser: browser}, nil
}

// forwardedDashboard is box name's dashboard through a local port bf
// forwards to its executor.
func (w *Workspace) forwardedDashboard(ctx context.Context, name string, bf engine.BoxForwarder) (*Dashboard, error) {
	d, err := w.dashboard(name)
	if err != nil {
		return nil, err
	}
	fwd, err := bf.ForwardExecutor(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("box %s: forwarding a local port to its executor: %w", name, err)
	}
	d.Forward, d.URL, d.Via = fwd, fwd.URL(), bf.ForwardVia()
	return d, nil
}
