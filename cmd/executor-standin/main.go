// Command executor-standin is a test-only stand-in for the real Executor
// daemon. It is never shipped to users: scripts/test-image.sh installs it as
// /usr/local/bin/executor in the offline test image, where the npm package
// cannot be installed, so that `hb executor`, `hb doctor` and the container
// healthchecks can be exercised against a real MCP endpoint.
//
// It speaks just enough MCP over Streamable HTTP (protocol 2025-06-18) for a
// client handshake, gated by the box's bearer token:
//
//	POST   /mcp      JSON-RPC; needs "Authorization: Bearer $EXECUTOR_TOKEN"
//	DELETE /mcp      ends the session named by Mcp-Session-Id
//	GET    /         HTML dashboard; needs the token as ?token= or the header
//	GET    /healthz  200 "ok", unauthenticated
//
// The command line accepts the form `hb executor` uses for the real Executor,
//
//	executor web --hostname 0.0.0.0 --port 4788 [--allowed-host NAME]...
//
// as well as `--listen HOST:PORT` (default 0.0.0.0:4788) and `--version`.
// --allowed-host is accepted for compatibility and not enforced.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// version is what `executor --version` prints and what initialize reports.
const version = "0.1.0"

func main() {
	os.Exit(run(os.Args[1:], os.Getenv("EXECUTOR_TOKEN"), os.Stdout, os.Stderr))
}

// config is the parsed command line.
type config struct {
	listen      string
	showVersion bool
}

func parseArgs(args []string, stderr io.Writer) (config, error) {
	// The real CLI has subcommands; the stand-in serves for any of the
	// foreground forms and ignores the word itself.
	for len(args) > 0 && (args[0] == "web" || args[0] == "serve" || args[0] == "daemon" || args[0] == "run") {
		args = args[1:]
	}
	fs := flag.NewFlagSet("executor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		c        config
		hostname string
		port     int
		allowed  multiFlag
	)
	fs.StringVar(&c.listen, "listen", "0.0.0.0:4788", "address to listen on, HOST:PORT")
	fs.StringVar(&hostname, "hostname", "", "bind address; overrides the host of --listen")
	fs.IntVar(&port, "port", 0, "port; overrides the port of --listen")
	fs.Var(&allowed, "allowed-host", "extra Host header to allow (accepted, not enforced)")
	fs.BoolVar(&c.showVersion, "version", false, "print the version and exit")
	fs.BoolVar(&c.showVersion, "v", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	host, p, err := net.SplitHostPort(c.listen)
	if err != nil {
		return c, fmt.Errorf("--listen %q: %w", c.listen, err)
	}
	if hostname != "" {
		host = hostname
	}
	if port != 0 {
		if port < 0 || port > 65535 {
			return c, fmt.Errorf("--port %d out of range", port)
		}
		p = strconv.Itoa(port)
	}
	c.listen = net.JoinHostPort(host, p)
	return c, nil
}

type multiFlag []string

func (m *multiFlag) String() string     { return fmt.Sprint([]string(*m)) }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func run(args []string, token string, stdout, stderr io.Writer) int {
	logger := log.New(stderr, "executor-standin: ", log.LstdFlags)
	c, err := parseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		logger.Print(err)
		return 2
	}
	if c.showVersion {
		fmt.Fprintln(stdout, version)
		return 0
	}
	if token == "" {
		logger.Print("EXECUTOR_TOKEN is empty; refusing to serve without a token")
		return 1
	}

	// An IPv4 address means IPv4 only, as the real daemon's bind does.
	network := "tcp"
	if host, _, _ := net.SplitHostPort(c.listen); net.ParseIP(host).To4() != nil {
		network = "tcp4"
	}
	ln, err := net.Listen(network, c.listen)
	if err != nil {
		logger.Print(err)
		return 1
	}
	srv := &http.Server{
		Handler:           newHandler(token, logger),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          logger,
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	logger.Printf("listening on %s (MCP at /mcp)", ln.Addr())

	select {
	case err := <-served:
		logger.Print(err)
		return 1
	case <-ctx.Done():
	}
	logger.Print("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		logger.Print(err)
		return 1
	}
	return 0
}
