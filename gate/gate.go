// Package gate is a box's egress gate: the process in a container of its
// own, on the box's internal network and on one with a route out, through
// which alone the agent reaches anything beyond its box.
//
// It serves two ports. ProxyPort is a forward proxy (absolute-URI HTTP
// requests and CONNECT) built on smokescreen: the gate's policy decides
// which destinations are allowed, and smokescreen resolves each name when
// the request is made and refuses any address that is private, local or
// closed unless listed under private, so a name cannot be pointed at the
// inside after it was allowed. RoutePort carries the credential routes:
// plain HTTP from the agent, TLS onwards with the credential's header, the
// onward connection made through the same proxy and the same checks. A
// CONNECT to a credential's destination is ended by the gate, with a
// certificate of an authority it makes when it starts (RoutePort serves
// the authority's certificate at CAPath, for the agent to trust), and each
// request in it goes on as a route's does; every other CONNECT is a tunnel.
//
// Every refusal is one JSON line on the refusals writer (ParseRefusals
// reads them back); smokescreen's own log goes to standard error at warning
// level. No credential value appears in either.
package gate

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stripe/smokescreen/pkg/smokescreen"
	"github.com/stripe/smokescreen/pkg/smokescreen/conntrack"
)

// grace is how long requests in flight are given to finish when the gate stops.
const grace = 5 * time.Second

// Run serves cfg on ProxyPort and RoutePort of every address of the machine
// until ctx ends, writing refusals as JSON lines to refusals.
func Run(ctx context.Context, cfg Config, refusals io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	// The gate is the last hop. goproxy consults HTTPS_PROXY for every
	// CONNECT: a proxy named in the gate's environment would carry traffic
	// past its rules.
	for _, v := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"} {
		_ = os.Unsetenv(v)
	}
	var lc net.ListenConfig
	proxyLn, err := lc.Listen(ctx, "tcp", ":"+strconv.Itoa(ProxyPort))
	if err != nil {
		return fmt.Errorf("listening for the proxy: %w", err)
	}
	routeLn, err := lc.Listen(ctx, "tcp", ":"+strconv.Itoa(RoutePort))
	if err != nil {
		_ = proxyLn.Close()
		return fmt.Errorf("listening for the routes: %w", err)
	}
	return runSides(ctx, cfg, proxyLn, routeLn, refusals)
}

// sideGate is the gate of one side of cfg ("" for the agent's, or
// SideExecutor) under policy: its refusals go to refusals (nowhere when
// nil) under that side's name, its logs to cfg's (standard error when it
// has none).
func sideGate(cfg Config, policy *compiled, refusals io.Writer, side string) *gate {
	if refusals == nil {
		refusals = io.Discard
	}
	logs := cfg.logs
	if logs == nil {
		logs = os.Stderr
	}
	return &gate{policy: policy, refusals: &refusalLog{w: refusals, side: side}, logs: logs, resolver: cfg.resolver}
}

// Serve serves cfg's proxy on proxyLn and its routes on routeLn until ctx
// ends, then closes both; it returns nil then, or the error that stopped a
// listener first.
func Serve(ctx context.Context, cfg Config, proxyLn, routeLn net.Listener, refusals io.Writer) error {
	policy, err := compile(cfg)
	if err != nil {
		_ = proxyLn.Close()
		_ = routeLn.Close()
		return err
	}
	g := sideGate(cfg, &policy, refusals, "")
	logs := g.logs
	g.proxyAddr = loopback(proxyLn.Addr())
	g.tunnels = newTunnelListener()
	g.authority = cfg.authority
	if g.token, err = newToken(); err == nil && g.authority == nil && len(policy.credentials) > 0 {
		g.authority, err = newAuthority(policy.credentials, nil)
	}
	if err != nil {
		_ = proxyLn.Close()
		_ = routeLn.Close()
		return err
	}
	g.onwardTransport = g.transports(cfg)
	errorLog := log.New(logs, "gate: ", log.LstdFlags)
	proxySrv := &http.Server{
		Handler:           g.proxy(proxyLn.Addr()),
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          errorLog,
	}
	routeSrv := &http.Server{
		Handler:           g.routes(),
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          errorLog,
	}
	interceptSrv := g.interceptServer(errorLog)

	served := make(chan error, 3)
	go func() { served <- proxySrv.Serve(proxyLn) }()
	go func() { served <- routeSrv.Serve(routeLn) }()
	go func() { served <- interceptSrv.Serve(g.tunnels) }()
	var failed error
	select {
	case <-ctx.Done():
	case failed = <-served:
	}
	var wg sync.WaitGroup
	for _, s := range []*http.Server{proxySrv, routeSrv, interceptSrv} {
		wg.Go(func() {
			stop, cancel := context.WithTimeout(context.Background(), grace)
			defer cancel()
			if s.Shutdown(stop) != nil {
				_ = s.Close()
			}
		})
	}
	wg.Wait()
	g.closeTunnels()
	for _, tr := range g.onwardTransport {
		tr.CloseIdleConnections()
	}
	if failed != nil && !errors.Is(failed, http.ErrServerClosed) {
		return fmt.Errorf("serving the gate: %w", failed)
	}
	return nil
}

// CheckHealth reports whether the gate of this machine (its container)
// answers on RoutePort: the container's health check.
func CheckHealth(ctx context.Context) error {
	return checkHealth(ctx, net.JoinHostPort("127.0.0.1", strconv.Itoa(RoutePort)))
}

const healthPath = "/_health"

func checkHealth(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+healthPath, nil)
	if err != nil {
		return err
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("the gate does not answer on %s: %w", addr, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64))
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "ok" {
		return fmt.Errorf("the gate on %s answered its health check with %s", addr, resp.Status)
	}
	return nil
}

// gate is one running gate's state.
type gate struct {
	policy   *compiled
	refusals *refusalLog
	logs     io.Writer
	resolver smokescreen.Resolver // nil: the system's
	// dial connects the proxy to the address it allowed; nil: a real
	// connection (Check notes the address instead).
	dial func(ctx context.Context, network, addr string, timeout time.Duration) (net.Conn, error)

	// The interception of CONNECTs to the credentials' destinations: the
	// authority (nil without a credential), the token of the gate's own
	// CONNECTs, the proxy they go to, each credential's onward transport,
	// and the connections ended here on their way to their server, with
	// their credential until it takes them.
	authority       *authority
	token           string
	proxyAddr       string
	onwardTransport map[string]*http.Transport
	tunnels         *tunnelListener
	ended           sync.Map // *tls.Conn → credential

	mu       sync.Mutex
	trackers []conntrack.TrackerInterface // of each proxy's CONNECT tunnels
}

// proxy is the handler of the proxy port listening on addr. It is two
// smokescreen proxies with one policy: a name listed under private goes to
// the one whose allowed ranges add the private ones (smokescreen classifies
// an address by its configuration's ranges alone, not by the name it came
// from), every other request to the one that keeps them closed.
func (g *gate) proxy(addr net.Addr) http.Handler {
	port := 0
	if tcp, ok := addr.(*net.TCPAddr); ok {
		port = tcp.Port
	}
	var allow []smokescreen.RuleRange // what private CIDR rules open, on their ports
	for _, r := range g.policy.private {
		if r.host == "" {
			allow = append(allow, ruleRanges(without(r.prefix, g.policy.closed), r.port)...)
		}
	}
	var toNames []netip.Prefix
	for _, p := range privateRanges {
		toNames = append(toNames, without(p, g.policy.closed)...)
	}
	deny := ruleRanges(append(append([]netip.Prefix(nil), g.policy.closed...), reserved...), 0)
	return dispatch{
		gate:   g,
		strict: g.smokescreen(port, allow, deny),
		names:  g.smokescreen(port, append(allow[:len(allow):len(allow)], ruleRanges(toNames, 0)...), deny),
	}
}

// dispatch sends each proxy request to the smokescreen proxy whose ranges
// apply to its destination.
type dispatch struct {
	*gate
	strict, names http.Handler
}

func (p dispatch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Headers smokescreen reads for itself: a role the gate does not use
	// and a trace ID it would log.
	r.Header.Del("X-Smokescreen-Role")
	r.Header.Del("X-Smokescreen-Trace-ID")
	onward := p.isOnward(r)
	d, err := destinationOf(r)
	if err == nil && len(r.Header.Values(upstreamProxyHeader)) > 0 {
		// Refused here, not by the ACL: smokescreen logs the header's
		// value before it asks.
		p.refuse(w, d, p.policy.decide(d, r.Header))
		return
	}
	// The agent's CONNECT to a credential's destination, once the policy
	// allowed it, is ended here; the gate's own goes on as a tunnel.
	if err == nil && r.Method == http.MethodConnect && !onward && p.authority != nil {
		if cred, ok := p.policy.credentialFor(d); ok && p.policy.decide(d, r.Header).allowed {
			p.intercept(w, cred)
			return
		}
	}
	if err == nil && p.policy.privateName(d) {
		p.names.ServeHTTP(w, r)
		return
	}
	p.strict.ServeHTTP(w, r)
}

// refuse answers a request the gate refuses before smokescreen sees it, as
// smokescreen answers those it refuses.
func (g *gate) refuse(w http.ResponseWriter, d destination, v verdict) {
	g.refusals.write(Refusal{Destination: d.String(), Rule: v.rule, Reason: v.reason})
	msg := fmt.Sprintf("Egress proxying is denied to host '%s': %s.", d, v.reason)
	w.Header().Set(smokescreenErrorHeader, msg)
	http.Error(w, msg, http.StatusProxyAuthRequired)
}

// smokescreen is a smokescreen proxy deciding by the gate's policy, with
// allow and deny as its address ranges.
func (g *gate) smokescreen(port int, allow, deny []smokescreen.RuleRange) http.Handler {
	c := smokescreen.NewConfig()
	logger := logrus.New()
	logger.SetOutput(g.logs)
	logger.SetLevel(logrus.WarnLevel)
	logger.SetFormatter(&logrus.JSONFormatter{TimestampFormat: time.RFC3339Nano})
	c.Log = logger
	c.Port = uint16(port)
	c.AllowRanges = allow
	c.DenyRanges = deny
	if g.resolver != nil {
		c.Resolver = g.resolver
	}
	c.EgressACL = decider{g.policy}
	c.AllowMissingRole = true // one client, the box: no roles
	c.RejectResponseHandlerWithCtx = func(sctx *smokescreen.SmokescreenContext, resp *http.Response) {
		if r, ok := g.refusalOf(sctx, resp); ok {
			g.refusals.write(r)
		}
	}
	c.PostDecisionRequestHandler = g.addCredential
	if g.dial != nil {
		c.ProxyDialTimeout = g.dial
	}
	c.ShuttingDown.Store(false)
	c.ConnTracker = conntrack.NewTracker(c.IdleTimeout, c.MetricsClient, c.Log, c.ShuttingDown, nil)
	if err := c.InitializeSelfConnectionDetection(); err != nil {
		logger.WithError(err).Warn("the proxy cannot tell its own addresses")
	}
	g.mu.Lock()
	g.trackers = append(g.trackers, c.ConnTracker)
	g.mu.Unlock()

	p := smokescreen.BuildProxy(c)
	p.Logger = log.New(g.logs, "gate: ", log.LstdFlags)
	// goproxy's transport for plain HTTP would follow the environment's
	// proxy and skip verifying TLS for an https:// URI sent as a plain
	// proxy request; the gate does neither.
	p.Tr.Proxy = nil
	p.Tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	return p
}

// addCredential adds a credential's header to a plain-HTTP request for its
// destination, once smokescreen has allowed the request.
func (g *gate) addCredential(req *http.Request) error {
	if req.Method == http.MethodConnect || req.URL.Scheme != "http" {
		return nil
	}
	d, err := destinationOf(req)
	if err != nil {
		return nil
	}
	if cred, ok := g.policy.credentialFor(d); ok {
		req.Header.Set(cred.Header, cred.Value)
	}
	return nil
}

// closeTunnels closes the CONNECT tunnels still open, which the servers'
// shutdown does not reach: goproxy took their connections over.
func (g *gate) closeTunnels() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, t := range g.trackers {
		t.Range(func(k, _ any) bool {
			if c, ok := k.(io.Closer); ok {
				_ = c.Close()
			}
			return true
		})
	}
}

// loopback is the address at which this process reaches a listener on addr.
func loopback(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return addr.String()
	}
	ip := tcp.IP
	if ip == nil || ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(tcp.Port))
}
