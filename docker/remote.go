package docker

import (
	"bytes"
	"context"
	"fmt"
	"github.com/hermes-box/boxes/mcp"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/container"

	"github.com/hermes-box/boxes/compose"
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

// ExecutorURL is where a person on this machine reaches an executor this
// engine publishes on bind:port. On a remote engine a port bound to a
// non-loopback address is reached at the engine's address; one bound to
// the remote's loopback has no address here, and keeps the remote's.
func (e *Engine) ExecutorURL(bind string, port int) string {
	if addr := e.Address(); addr != "" && !isLoopback(bind) {
		return reconcile.ExecutorURL(addr, port)
	}
	return reconcile.ExecutorURL(bind, port)
}

func isLoopback(bind string) bool {
	ip := net.ParseIP(bind)
	return ip != nil && ip.IsLoopback()
}

// remoteProbe proves a remote box's executor ready with an authenticated MCP
// initialize, without waiting for the healthcheck's interval: straight to
// its published port when this machine can reach it, otherwise from inside
// the executor's own container through the engine.
func (e *Engine) remoteProbe(ctx context.Context, c container.Summary, bind string, port int, token string) (string, error) {
	url := e.ExecutorURL(bind, port)
	onThisMachine := strings.HasPrefix(e.Endpoint.URL, "unix://")
	if onThisMachine || (e.Address() != "" && !isLoopback(bind)) {
		return url, mcp.Initialize(ctx, url+"/mcp", token)
	}
	return url, e.initializeInside(ctx, c.ID, token)
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
	code, err := e.Exec(ctx, id, ExecOptions{
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
