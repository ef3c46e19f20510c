package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// How a person on this machine reaches a port an engine publishes.
const (
	// ReachDirect: at Reach.URL.
	ReachDirect = "direct"
	// ReachSSHForward: the port is on the loopback of a remote engine
	// reached over ssh; boxes open forwards a local port to it.
	ReachSSHForward = "ssh-forward"
	// ReachHostOnly: the port is on the loopback of a remote engine
	// reached without ssh; only that machine reaches it.
	ReachHostOnly = "host-only"
	// ReachAPIForward: the executor publishes no port; boxes open forwards
	// a local port to it through the engine (a cluster's API server).
	ReachAPIForward = "api-forward"
)

// Reach is how a person on this machine reaches a published port.
type Reach struct {
	// How is ReachDirect, ReachSSHForward, ReachHostOnly or
	// ReachAPIForward; "" for no port.
	How string
	// URL is the executor's address from here; "" unless How is ReachDirect.
	URL string
	// OnHost is the address on the engine's machine, as host:port.
	OnHost string
}

// Where is the reach in words for messages about box on host: its URL, or
// how else it is reached.
func (r Reach) Where(host, box string) string {
	switch r.How {
	case ReachSSHForward:
		return fmt.Sprintf("%s on %s loopback (boxes open %s forwards it here over ssh)", r.OnHost, MachineName(host)+"'s", box)
	case ReachHostOnly:
		return fmt.Sprintf("%s on %s loopback (reachable on that machine only)", r.OnHost, MachineName(host)+"'s")
	}
	return r.URL
}

// MachineName names where host's engine runs: the local engine's may be
// another machine too, reached through DOCKER_HOST=ssh://.
func MachineName(host string) string {
	if host == "" {
		return "the engine's machine"
	}
	return "host " + host
}

// Forward is a local port forwarded to a port on the loopback of an
// engine's machine: it lives until Close, or until its connection breaks.
type Forward interface {
	// URL is the forwarded port's address here, http://127.0.0.1:PORT.
	URL() string
	// Done is closed once the forward ended; Err says why.
	Done() <-chan struct{}
	Err() error
	Close() error
}

// ExecOptions is one command run in a running container.
type ExecOptions struct {
	Cmd     []string
	User    string
	WorkDir string
	Env     []string
	// TTY allocates a terminal in the container: output arrives as one
	// stream, and Resize changes its size.
	TTY bool
	// Stdin, when set, is copied to the command until it ends; the command
	// sees end of input after that.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Started, when set, is called with a function that resizes the
	// command's terminal (TTY only), once the command runs.
	Started func(resize func(height, width uint))
}

// LogOptions select a container's logs.
type LogOptions struct {
	Follow     bool
	Tail       string // "all" or a number of lines
	Timestamps bool
}

// ErrForwardEnded is a forward that ended before anything answered
// through it.
var ErrForwardEnded = errors.New("the forward ended")

// AwaitAnswer returns once an HTTP GET of url, through a forward, is
// answered, whatever the answer: the forward carries traffic and something
// listens at its end. It fails with ErrForwardEnded once ended is closed,
// with ctx's error once ctx ends, and after timeout with the last error.
func AwaitAnswer(ctx context.Context, url string, ended <-chan struct{}, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: 3 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for {
		select {
		case <-ended:
			return ErrForwardEnded
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing answered within %s: %w", timeout, err)
		}
		select {
		case <-ended:
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}
