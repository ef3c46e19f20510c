package gate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// The executor's side of the gate, when the executor has a door: a second
// policy in the same process, served on ExecutorProxyPort at the gate's
// address on the network it shares with the executor alone, so that the
// agent, on the inside network, has no way to it; and the executor's
// published port, which the gate publishes in its place (Docker publishes
// no port of a container on internal networks only) and relays to it.
const (
	// ExecutorProxyPort is the executor's proxy, on the executor's network.
	ExecutorProxyPort = 3130
	// RelayPort is where the gate takes the executor's published port: the
	// executor's own port number, so that a published port reads the same
	// whichever container publishes it.
	RelayPort = 4788
	// SideExecutor names the executor's side in a Refusal.
	SideExecutor = "executor"
)

// Side is the executor's side of the gate: its rules, read as Config's
// Egress, Allow and Private (the Config's Closed closes them too; the
// executor has no credential routes), where its proxy listens and where the
// published port is relayed to.
type Side struct {
	Egress  string `json:"egress"`
	Allow   []Rule `json:"allow,omitempty"`
	Private []Rule `json:"private,omitempty"`
	// Listen is a name that resolves, in the gate, to the gate's address
	// on the network it shares with the executor alone (a network alias of
	// the gate there), or that address itself. The proxy listens on it
	// only, and takes connections from that network's addresses only.
	Listen string `json:"listen"`
	// Relay is host:port of the executor's MCP port, to which the gate's
	// RelayPort is relayed.
	Relay string `json:"relay"`
}

// compileSide is the executor's side of c as the policy the gate matches
// against.
func compileSide(c Config) (compiled, error) {
	s := c.Executor
	out, err := compile(Config{Egress: s.Egress, Allow: s.Allow, Private: s.Private, Closed: c.Closed})
	out.side = SideExecutor
	var errs []error
	if err != nil {
		errs = append(errs, fmt.Errorf("the executor's side: %w", err))
	}
	if s.Listen == "" {
		errs = append(errs, errors.New("the executor's side has no address to listen on"))
	}
	if _, _, err := net.SplitHostPort(s.Relay); err != nil || s.Relay == "" {
		errs = append(errs, fmt.Errorf("the executor's side: relay %q is not host:port", s.Relay))
	}
	return out, errors.Join(errs...)
}

// validateSide is what Validate adds for the executor's side, if any.
func (c Config) validateSide() error {
	if c.Executor == nil {
		return nil
	}
	_, err := compileSide(c)
	return err
}

// runSides serves the agent's side (proxyLn, routeLn) and, when cfg has
// one, the executor's: its proxy at the address Listen resolves to, its
// relay on RelayPort of every address (Docker delivers the published port
// to the gate's address on the box's ordinary network).
func runSides(ctx context.Context, cfg Config, proxyLn, routeLn net.Listener, refusals io.Writer) error {
	if cfg.Executor == nil {
		return Serve(ctx, cfg, proxyLn, routeLn, refusals)
	}
	closeBoth := func() { _ = proxyLn.Close(); _ = routeLn.Close() }
	addr, err := listenAddress(ctx, cfg.Executor.Listen)
	if err != nil {
		closeBoth()
		return err
	}
	network, err := networkOf(addr)
	if err != nil {
		closeBoth()
		return err
	}
	var lc net.ListenConfig
	execLn, err := lc.Listen(ctx, "tcp", net.JoinHostPort(addr.String(), strconv.Itoa(ExecutorProxyPort)))
	if err != nil {
		closeBoth()
		return fmt.Errorf("listening for the executor's proxy: %w", err)
	}
	relayLn, err := lc.Listen(ctx, "tcp", ":"+strconv.Itoa(RelayPort))
	if err != nil {
		closeBoth()
		_ = execLn.Close()
		return fmt.Errorf("listening for the executor's published port: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 2)
	go func() { done <- Serve(ctx, cfg, proxyLn, routeLn, refusals) }()
	go func() { done <- ServeExecutor(ctx, cfg, execLn, relayLn, network, refusals) }()
	first := <-done
	cancel()
	second := <-done
	return errors.Join(first, second)
}

// listenAddress resolves name, the executor's side's Listen, to one IPv4
// address, trying for a while: the engine's DNS knows a container's
// aliases once it runs, which it may not answer for at the first instant.
func listenAddress(ctx context.Context, name string) (netip.Addr, error) {
	if a, err := netip.ParseAddr(name); err == nil {
		return a.Unmap(), nil
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var last error
	for {
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip4", name)
		switch {
		case err == nil && len(addrs) == 1:
			return addrs[0].Unmap(), nil
		case err == nil:
			// Two addresses would be two networks: the proxy would be
			// reachable from one that is not the executor's alone.
			return netip.Addr{}, fmt.Errorf("the executor's proxy: %s resolves to %d addresses, want the gate's one on the executor's network", name, len(addrs))
		}
		last = err
		select {
		case <-ctx.Done():
			return netip.Addr{}, fmt.Errorf("the executor's proxy: %s does not resolve to the gate's address on the executor's network: %w", name, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// networkOf is the network of the interface that addr is on: the
// addresses the executor's proxy takes connections from.
func networkOf(addr netip.Addr) (netip.Prefix, error) {
	ifaces, err := net.InterfaceAddrs()
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("reading the gate's addresses: %w", err)
	}
	for _, a := range ifaces {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(n.IP)
		bits, _ := n.Mask.Size()
		if p := netip.PrefixFrom(ip.Unmap(), bits).Masked(); ok && p.Contains(addr) {
			return p, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("the executor's proxy: the gate has no interface on the network of %s", addr)
}

// ServeExecutor serves the executor's side of cfg: its proxy on proxyLn,
// taking connections from addresses in from alone, and the relay of the
// executor's published port on relayLn, until ctx ends.
func ServeExecutor(ctx context.Context, cfg Config, proxyLn, relayLn net.Listener, from netip.Prefix, refusals io.Writer) error {
	policy, err := compileSide(cfg)
	if err != nil {
		_ = proxyLn.Close()
		_ = relayLn.Close()
		return err
	}
	g := sideGate(cfg, &policy, refusals, SideExecutor)
	logs := g.logs
	srv := &http.Server{
		Handler:           g.proxy(proxyLn.Addr()),
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          log.New(logs, "gate: executor: ", log.LstdFlags),
	}
	r := &relay{to: cfg.Executor.Relay, logs: logs, conns: map[net.Conn]bool{}}
	served := make(chan error, 2)
	go func() { served <- srv.Serve(fromOnly{Listener: proxyLn, from: from, logs: logs}) }()
	go func() { served <- r.serve(relayLn) }()
	var failed error
	select {
	case <-ctx.Done():
	case failed = <-served:
	}
	_ = relayLn.Close()
	stop, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if srv.Shutdown(stop) != nil {
		_ = srv.Close()
	}
	g.closeTunnels()
	r.closeAll()
	if failed != nil && !errors.Is(failed, http.ErrServerClosed) && !errors.Is(failed, net.ErrClosed) {
		return fmt.Errorf("serving the executor's side of the gate: %w", failed)
	}
	return nil
}

// fromOnly is a listener that closes, unanswered, every connection whose
// peer is outside from: only the executor's network reaches the
// executor's proxy, whatever reaches the address.
type fromOnly struct {
	net.Listener
	from netip.Prefix
	logs io.Writer
}

func (l fromOnly) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if peer, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			if a, ok := netip.AddrFromSlice(peer.IP); ok && l.from.Contains(a.Unmap()) {
				return c, nil
			}
		}
		fmt.Fprintf(l.logs, "gate: executor's proxy: a connection from %s, outside the executor's network %s, closed\n", c.RemoteAddr(), l.from)
		_ = c.Close()
	}
}

// relay carries each connection to the gate's RelayPort to the executor's
// port, both ways, until either side closes.
type relay struct {
	to   string
	logs io.Writer

	mu    sync.Mutex
	conns map[net.Conn]bool
	done  bool
}

func (r *relay) serve(ln net.Listener) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go r.carry(c)
	}
}

func (r *relay) carry(in net.Conn) {
	out, err := net.DialTimeout("tcp", r.to, 10*time.Second)
	if err != nil {
		fmt.Fprintf(r.logs, "gate: the executor's published port: %v\n", err)
		_ = in.Close()
		return
	}
	if !r.track(in, out) {
		return
	}
	defer r.untrack(in, out)
	var wg sync.WaitGroup
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		// Pass the end of one direction on; the other may still flow.
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		} else {
			_ = dst.Close()
		}
	}
	wg.Add(2)
	go pipe(out, in)
	go pipe(in, out)
	wg.Wait()
}

// track records a relayed pair, or closes it when the relay has stopped.
func (r *relay) track(cs ...net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	for _, c := range cs {
		r.conns[c] = true
	}
	return true
}

func (r *relay) untrack(cs ...net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
		delete(r.conns, c)
	}
}

// closeAll closes the relayed connections still open.
func (r *relay) closeAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = true
	for c := range r.conns {
		_ = c.Close()
	}
}
