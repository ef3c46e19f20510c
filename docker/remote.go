package docker

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/mcp"
	"github.com/hermes-box/boxes/reconcile"
)

// Address is the machine the engine runs on as this machine reaches it: the
// host of its ssh:// or tcp:// URL; "" for an engine on a local socket.
func (e *Engine) Address() string {
	return endpointAddress(e.Endpoint.URL)
}

func endpointAddress(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "ssh" && u.Scheme != "tcp") {
		return ""
	}
	return u.Hostname()
}

// ExecutorReach says how a person on this machine reaches a port this engine
// publishes on bind:port. On a remote engine a port bound to a
// non-loopback address is reached at the engine's address; one bound to
// the remote's loopback only through an ssh forward (see Forward), and not
// at all when the engine is reached over tcp://.
func (e *Engine) ExecutorReach(bind string, port int) engine.Reach {
	onHost := strings.TrimPrefix(reconcile.ExecutorURL(bind, port), "http://")
	addr := e.Address()
	switch {
	case port == 0:
		return engine.Reach{}
	case addr == "":
		return engine.Reach{How: engine.ReachDirect, URL: reconcile.ExecutorURL(bind, port), OnHost: onHost}
	case !isLoopback(bind):
		return engine.Reach{How: engine.ReachDirect, URL: reconcile.ExecutorURL(addr, port), OnHost: onHost}
	case strings.HasPrefix(e.Endpoint.URL, "ssh://"):
		return engine.Reach{How: engine.ReachSSHForward, OnHost: onHost}
	}
	return engine.Reach{How: engine.ReachHostOnly, OnHost: onHost}
}

func isLoopback(bind string) bool {
	ip := net.ParseIP(bind)
	return ip != nil && ip.IsLoopback()
}

// remoteProbe proves a box's executor ready with an authenticated MCP
// initialize, without waiting for the healthcheck's interval: straight to
// its published port when this machine can reach it, otherwise (a port on
// a remote's loopback) from inside the executor's own container through
// the engine. It returns where a person here reaches the executor (see
// Reach.Where).
func (e *Engine) remoteProbe(ctx context.Context, box string, c container.Summary, bind string, port int, token string) (string, error) {
	reach := e.ExecutorReach(bind, port)
	if reach.How == engine.ReachDirect {
		return reach.URL, mcp.Initialize(ctx, reach.URL+"/mcp", token)
	}
	return reach.Where(e.Host, box), e.initializeInside(ctx, c.ID, token)
}

// initializeInside sends the MCP initialize from inside container id to its
// own executor port, with curl (which the image has); the token travels in
// the exec's environment, not on a command line.
func (e *Engine) initializeInside(ctx context.Context, id, token string) error {
	const tokenVar = "BOXES_PROBE_TOKEN"
	body := mcp.Request
	// One exec polls from inside every 100 ms until the executor gives any
	// HTTP answer (an exec over ssh costs a session of its own), for up to
	// the seconds in $3.
	script := `end=$(($(date +%s) + $3)); while :; do ` +
		`out=$(curl -s -m 3 -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' ` +
		`-H "Authorization: Bearer $` + tokenVar + `" -d "$1" -w '\n%{http_code}' "$2"); ` +
		`case "$out" in *000) [ "$(date +%s)" -lt "$end" ] && { sleep 0.1; continue; } ;; esac; ` +
		`printf '%s\n' "$out"; exit 0; done`
	var out, errOut bytes.Buffer
	code, err := e.Exec(ctx, id, engine.ExecOptions{
		Cmd:    []string{"sh", "-c", script, "probe", body, "http://127.0.0.1:" + strconv.Itoa(compose.ExecutorPort) + "/mcp", "20"},
		Env:    []string{tokenVar + "=" + token},
		Stdout: &out,
		Stderr: &errOut,
	})
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("initialize from inside the box: curl exit %d: %s", code, bytes.TrimSpace(errOut.Bytes()))
	}
	data := bytes.TrimRight(out.Bytes(), "\n")
	i := bytes.LastIndexByte(data, '\n')
	if i < 0 {
		return fmt.Errorf("initialize from inside the box: no HTTP status")
	}
	status, _ := strconv.Atoi(string(data[i+1:]))
	if status != 200 {
		return &mcp.StatusError{Code: status}
	}
	return mcp.CheckAnswer(data[:i])
}

// MachineAddresses are the addresses of the machine the engine runs on, as
// this machine sees it: its own interfaces' for a unix socket, and what the
// host name resolves to for tcp:// and ssh:// (a docker context's address
// included).
func (e *Engine) MachineAddresses() []netip.Addr {
	return e.Endpoint.MachineAddresses()
}

// MachineAddresses are the addresses of the machine the engine at ep runs
// on, as Engine.MachineAddresses finds them, without reaching the engine.
func (ep Endpoint) MachineAddresses() []netip.Addr {
	u, err := url.Parse(ep.URL)
	if err != nil {
		return nil
	}
	var out []netip.Addr
	switch u.Scheme {
	case "unix", "npipe":
		addrs, err := net.InterfaceAddrs()
		if err != nil {
			return nil
		}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				out = append(out, p.Addr())
			}
		}
	case "tcp", "ssh", "http", "https":
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", u.Hostname())
		if err != nil {
			return nil
		}
		out = ips
	}
	return out
}
