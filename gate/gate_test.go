package gate

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The gate's tests run a gate in-process on loopback, with upstream servers
// from httptest on 127.0.0.1. Loopback is closed like every local address,
// so a test reaches its servers only through a private exception, and shows
// the same request refused without it. Names resolve through a fake
// resolver; none reaches the real DNS.

// fakeDNS answers names from a table; an entry with several answers gives
// them in turn, one per lookup (a name rebound between two requests).
type fakeDNS struct {
	mu    sync.Mutex
	names map[string][]string
}

func dns(names map[string][]string) *fakeDNS { return &fakeDNS{names: names} }

func (f *fakeDNS) LookupIP(_ context.Context, _, host string) ([]net.IP, error) {
	if ip := net.ParseIP(host); ip != nil {
		return []net.IP{ip}, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	answers := f.names[host]
	if len(answers) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	ip := net.ParseIP(answers[0])
	if len(answers) > 1 {
		f.names[host] = answers[1:]
	}
	return []net.IP{ip}, nil
}

func (f *fakeDNS) LookupPort(_ context.Context, _, service string) (int, error) {
	return strconv.Atoi(service)
}

// lockedBuffer is a buffer the gate's goroutines write and a test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// running is a gate serving on loopback for one test.
type running struct {
	t              testing.TB
	proxy, route   string // host:port
	refusals, logs *lockedBuffer
}

func start(t testing.TB, cfg Config) *running {
	t.Helper()
	if cfg.resolver == nil {
		cfg.resolver = dns(nil)
	}
	g := &running{t: t, refusals: &lockedBuffer{}, logs: &lockedBuffer{}}
	cfg.logs = g.logs
	proxyLn := listen(t)
	routeLn := listen(t)
	g.proxy, g.route = proxyLn.Addr().String(), routeLn.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, cfg, proxyLn, routeLn, g.refusals) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return g
}

// get sends GET rawURL to the proxy as a plain-HTTP proxy request and
// returns the status and body.
func (g *running) get(rawURL string, header http.Header) (int, string) {
	g.t.Helper()
	proxyURL := &url.URL{Scheme: "http", Host: g.proxy}
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL), DisableKeepAlives: true}}
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		g.t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		g.t.Fatalf("GET %s through the gate: %v", rawURL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// connect asks the proxy for a tunnel to target and, once it has one, sends
// GET / through it; it returns the CONNECT's status and the GET's body.
func (g *running) connect(target string, header http.Header) (int, string) {
	g.t.Helper()
	c, err := net.Dial("tcp", g.proxy)
	if err != nil {
		g.t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if header == nil {
		header = http.Header{}
	}
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: target}, Host: target, Header: header}
	if err := req.Write(c); err != nil {
		g.t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		g.t.Fatalf("CONNECT %s: %v", target, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, ""
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target)
	inner, err := http.ReadResponse(br, nil)
	if err != nil {
		g.t.Fatalf("GET through the tunnel to %s: %v", target, err)
	}
	defer inner.Body.Close()
	body, _ := io.ReadAll(inner.Body)
	return resp.StatusCode, string(body)
}

// refused is what the gate printed as refusals; every line it printed must
// be one.
func (g *running) refused() []Refusal {
	g.t.Helper()
	out := g.refusals.String()
	refusals, err := ParseRefusals(strings.NewReader(out))
	if err != nil {
		g.t.Fatal(err)
	}
	if lines := strings.Count(out, "\n"); lines != len(refusals) {
		g.t.Errorf("the gate printed %d lines and %d refusals:\n%s", lines, len(refusals), out)
	}
	return refusals
}

// lastRefusal is the gate's last refusal, which must be of rule for dest.
func (g *running) lastRefusal(dest, rule string) Refusal {
	g.t.Helper()
	refusals := g.refused()
	if len(refusals) == 0 {
		g.t.Fatalf("no refusal printed; want %s for %s", rule, dest)
	}
	last := refusals[len(refusals)-1]
	if last.Destination != dest || last.Rule != rule || last.Reason == "" || last.Time.IsZero() {
		g.t.Fatalf("refusal %+v; want rule %s for %s, with a reason and a time", last, rule, dest)
	}
	return last
}

// hello is an upstream that answers "hello" and keeps the last request's headers.
type hello struct {
	*httptest.Server
	mu     sync.Mutex
	header http.Header
}

func newHello(t *testing.T) *hello {
	h := &hello{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.header = r.Header.Clone()
		h.mu.Unlock()
		_, _ = io.WriteString(w, "hello")
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hello) lastHeader() http.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.header
}

func (h *hello) port() int { return h.Listener.Addr().(*net.TCPAddr).Port }

func TestPrivateExceptionOpensAnAddressOnItsPort(t *testing.T) {
	srv := newHello(t)
	addr := srv.Listener.Addr().String()

	open := start(t, Config{Egress: EgressOpen, Private: []Rule{{CIDR: "127.0.0.1/32", Port: srv.port()}}})
	if code, body := open.get("http://"+addr+"/", nil); code != 200 || body != "hello" {
		t.Errorf("plain HTTP with the exception: %d %q", code, body)
	}
	if code, body := open.connect(addr, nil); code != 200 || body != "hello" {
		t.Errorf("CONNECT with the exception: %d %q", code, body)
	}
	if got := open.refused(); len(got) != 0 {
		t.Errorf("refusals with the exception: %+v", got)
	}

	closed := start(t, Config{Egress: EgressOpen})
	if code, _ := closed.get("http://"+addr+"/", nil); code != http.StatusProxyAuthRequired {
		t.Errorf("plain HTTP without the exception: %d, want 407", code)
	}
	r := closed.lastRefusal(addr, RulePrivateRange)
	if !strings.Contains(r.Reason, "127.0.0.1 is a loopback address") {
		t.Errorf("reason %q does not say why", r.Reason)
	}
	if code, _ := closed.connect(addr, nil); code != http.StatusProxyAuthRequired {
		t.Errorf("CONNECT without the exception: %d, want 407", code)
	}
	closed.lastRefusal(addr, RulePrivateRange)

	otherPort := start(t, Config{Egress: EgressOpen, Private: []Rule{{CIDR: "127.0.0.1/32", Port: srv.port() + 1}}})
	if code, _ := otherPort.connect(addr, nil); code != http.StatusProxyAuthRequired {
		t.Errorf("CONNECT with an exception on another port: %d, want 407", code)
	}
	otherPort.lastRefusal(addr, RulePrivateRange)

	// An exception does not open what Closed lists inside its range.
	overlap := start(t, Config{Egress: EgressOpen, Private: []Rule{{CIDR: "127.0.0.0/8"}}, Closed: []string{"127.0.0.1"}})
	if code, _ := overlap.connect(addr, nil); code != http.StatusProxyAuthRequired {
		t.Errorf("CONNECT to a closed address inside an exception: %d, want 407", code)
	}
	overlap.lastRefusal(addr, RuleClosed)
}

func TestEgressNoneRefusesAll(t *testing.T) {
	srv := newHello(t)
	g := start(t, Config{Egress: EgressNone, resolver: dns(map[string][]string{"api.test": {"127.0.0.1"}})})
	dest := fmt.Sprintf("api.test:%d", srv.port())
	if code, _ := g.get("http://"+dest+"/", nil); code != http.StatusProxyAuthRequired {
		t.Errorf("plain HTTP: %d, want 407", code)
	}
	g.lastRefusal(dest, RuleNone)
	if code, _ := g.connect(dest, nil); code != http.StatusProxyAuthRequired {
		t.Errorf("CONNECT: %d, want 407", code)
	}
	g.lastRefusal(dest, RuleNone)
}

func TestEgressListByNameWildcardAndPort(t *testing.T) {
	srv := newHello(t)
	p := srv.port()
	names := map[string][]string{}
	for _, n := range []string{"api.test", "x.wild.test", "a.b.wild.test", "wild.test", "other.test", "port.test", "wrongport.test"} {
		names[n] = []string{"127.0.0.1"}
	}
	g := start(t, Config{
		Egress: EgressList,
		Allow: []Rule{
			{Host: "api.test"},
			{Host: "*.wild.test"},
			{Host: "port.test", Port: p},
			{Host: "wrongport.test", Port: p + 1},
		},
		// Opens loopback on the server's port to the names the list allows.
		Private:  []Rule{{CIDR: "127.0.0.1/32", Port: p}},
		resolver: dns(names),
	})
	for host, allowed := range map[string]bool{
		"api.test":       true,
		"API.test.":      true,
		"x.wild.test":    true,
		"a.b.wild.test":  true,
		"wild.test":      false, // *.domain is the names under it, not the apex
		"other.test":     false,
		"port.test":      true,
		"wrongport.test": false,
	} {
		dest := net.JoinHostPort(host, strconv.Itoa(p))
		want := http.StatusProxyAuthRequired
		if allowed {
			want = http.StatusOK
		}
		if code, _ := g.get("http://"+dest+"/", nil); code != want {
			t.Errorf("plain HTTP to %s: %d, want %d", dest, code, want)
		}
		if code, _ := g.connect(dest, nil); code != want {
			t.Errorf("CONNECT to %s: %d, want %d", dest, code, want)
		}
		if !allowed {
			g.lastRefusal(dest, RuleNotAllowed)
		}
	}
}

func TestNamesResolveAtConnectTime(t *testing.T) {
	srv := newHello(t)
	p := srv.port()
	dest := fmt.Sprintf("rebind.test:%d", p)
	// The name first resolves to the opened address, then to another
	// loopback address: the second request is refused for it.
	g := start(t, Config{
		Egress:   EgressOpen,
		Private:  []Rule{{CIDR: "127.0.0.1/32", Port: p}},
		resolver: dns(map[string][]string{"rebind.test": {"127.0.0.1", "127.0.0.2"}}),
	})
	if code, _ := g.connect(dest, nil); code != http.StatusOK {
		t.Fatalf("first CONNECT: %d, want 200", code)
	}
	if code, _ := g.connect(dest, nil); code != http.StatusProxyAuthRequired {
		t.Fatalf("CONNECT after the name moved: %d, want 407", code)
	}
	r := g.lastRefusal(dest, RulePrivateRange)
	if !strings.Contains(r.Reason, "rebind.test resolves to 127.0.0.2, a loopback address") {
		t.Errorf("reason %q does not name the address", r.Reason)
	}
}

func TestPrivateNameMayResolveToAPrivateAddress(t *testing.T) {
	srv := newHello(t)
	p := srv.port()
	names := dns(map[string][]string{"db.test": {"127.0.0.1"}, "other.test": {"127.0.0.1"}})
	g := start(t, Config{Egress: EgressOpen, Private: []Rule{{Host: "db.test", Port: p}}, resolver: names})
	if code, body := g.get(fmt.Sprintf("http://db.test:%d/", p), nil); code != 200 || body != "hello" {
		t.Errorf("the listed name: %d %q", code, body)
	}
	if code, _ := g.connect(fmt.Sprintf("db.test:%d", p), nil); code != 200 {
		t.Errorf("CONNECT to the listed name: %d", code)
	}
	// The same address by another name, or the name on another port, stays closed.
	for _, dest := range []string{fmt.Sprintf("other.test:%d", p), fmt.Sprintf("db.test:%d", p+1)} {
		if code, _ := g.connect(dest, nil); code != http.StatusProxyAuthRequired {
			t.Errorf("CONNECT to %s: %d, want 407", dest, code)
		}
		g.lastRefusal(dest, RulePrivateRange)
	}

	// No exception opens what Closed lists: the engine machine's addresses.
	closed := start(t, Config{Egress: EgressOpen, Private: []Rule{{Host: "db.test"}}, Closed: []string{"127.0.0.1/32"}, resolver: names})
	dest := fmt.Sprintf("db.test:%d", p)
	if code, _ := closed.connect(dest, nil); code != http.StatusProxyAuthRequired {
		t.Errorf("CONNECT to a listed name at a closed address: %d, want 407", code)
	}
	r := closed.lastRefusal(dest, RuleClosed)
	if !strings.Contains(r.Reason, "always closed") {
		t.Errorf("reason %q", r.Reason)
	}
}

func TestUnresolvedNameIsRefused(t *testing.T) {
	g := start(t, Config{Egress: EgressOpen})
	if code, _ := g.get("http://nowhere.test/", nil); code != http.StatusBadGateway {
		t.Errorf("plain HTTP: %d, want 502", code)
	}
	g.lastRefusal("nowhere.test:80", RuleResolveFailed)
	if code, _ := g.connect("nowhere.test:443", nil); code != http.StatusBadGateway {
		t.Errorf("CONNECT: %d, want 502", code)
	}
	r := g.lastRefusal("nowhere.test:443", RuleResolveFailed)
	if !strings.Contains(r.Reason, "no such host") {
		t.Errorf("reason %q", r.Reason)
	}
}

func TestUpstreamProxyHeaderIsRefused(t *testing.T) {
	srv := newHello(t)
	addr := srv.Listener.Addr().String()
	g := start(t, Config{Egress: EgressOpen, Private: []Rule{{CIDR: "127.0.0.1/32"}}})
	for _, value := range []string{"https://elsewhere.test:443", "::not a url"} {
		h := http.Header{"X-Upstream-Https-Proxy": {value}}
		if code, _ := g.connect(addr, h); code != http.StatusProxyAuthRequired {
			t.Errorf("CONNECT naming proxy %q: %d, want 407", value, code)
		}
		g.lastRefusal(addr, RuleUpstreamProxy)
		if code, _ := g.get("http://"+addr+"/", h); code != http.StatusProxyAuthRequired {
			t.Errorf("plain HTTP naming proxy %q: %d, want 407", value, code)
		}
		g.lastRefusal(addr, RuleUpstreamProxy)
	}
}

const secret = "sk-test-0123456789-do-not-print"

func TestPlainHTTPToACredentialsDestinationCarriesIt(t *testing.T) {
	srv := newHello(t)
	p := srv.port()
	g := start(t, Config{
		Egress:      EgressNone, // the credential's destination is allowed by that fact
		Private:     []Rule{{CIDR: "127.0.0.1/32", Port: p}},
		Credentials: []Credential{{Name: "api", Host: "api.test", Port: p, Header: "X-Api-Key", Value: secret}},
		resolver:    dns(map[string][]string{"api.test": {"127.0.0.1"}}),
	})
	if code, _ := g.get(fmt.Sprintf("http://api.test:%d/v1", p), http.Header{"X-Api-Key": {"the-agents-own"}}); code != 200 {
		t.Fatalf("plain HTTP to the credential's destination: %d", code)
	}
	if got := srv.lastHeader().Values("X-Api-Key"); len(got) != 1 || got[0] != secret {
		t.Errorf("upstream got X-Api-Key %q, want the credential's value alone", got)
	}
	// The same server by address is not the credential's destination.
	if code, _ := g.get(fmt.Sprintf("http://127.0.0.1:%d/", p), nil); code != 200 {
		t.Fatalf("plain HTTP by address: %d", code)
	}
	if got := srv.lastHeader().Values("X-Api-Key"); len(got) != 0 {
		t.Errorf("upstream got X-Api-Key %q from a request to another destination", got)
	}
	assertNoSecret(t, g)
}

// tlsUpstream is an HTTPS server (its certificate is for example.com) and
// the roots that trust it.
func tlsUpstream(t *testing.T, h http.Handler) (*httptest.Server, *x509.CertPool) {
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	return srv, roots
}

// routeConfig is a gate with one credential route "api" to example.com
// (resolving to loopback) on srv's port.
func routeConfig(srv *httptest.Server, roots *x509.CertPool, private bool) Config {
	p := srv.Listener.Addr().(*net.TCPAddr).Port
	cfg := Config{
		Egress:      EgressNone,
		Credentials: []Credential{{Name: "api", Host: "example.com", Port: p, Header: "X-Api-Key", Value: secret}},
		resolver:    dns(map[string][]string{"example.com": {"127.0.0.1"}}),
		rootCAs:     roots,
	}
	if private {
		cfg.Private = []Rule{{Host: "example.com"}}
	}
	return cfg
}

func TestRouteAddsTheCredentialOverTLS(t *testing.T) {
	type seen struct {
		header      http.Header
		path, query string
		host, body  string
	}
	got := make(chan seen, 1)
	srv, roots := tlsUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- seen{header: r.Header.Clone(), path: r.URL.EscapedPath(), query: r.URL.RawQuery, host: r.Host, body: string(body)}
		w.Header().Set("X-Upstream", "yes")
		_, _ = io.WriteString(w, "answer")
	}))
	g := start(t, routeConfig(srv, roots, true))

	req, _ := http.NewRequest(http.MethodPost, "http://"+g.route+"/api/v1/things%2Fone?q=1&r=two", strings.NewReader("payload"))
	req.Header.Set("X-Api-Key", "the-agents-own")
	req.Header.Set("Proxy-Authorization", "Basic dXNlcjpwYXNz")
	req.Header.Set("Connection", "X-Hop")
	req.Header.Set("X-Hop", "1")
	req.Header.Set("X-Kept", "2")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "answer" || resp.Header.Get("X-Upstream") != "yes" {
		t.Fatalf("route answered %s %q", resp.Status, body)
	}
	s := <-got
	if v := s.header.Values("X-Api-Key"); len(v) != 1 || v[0] != secret {
		t.Errorf("upstream got X-Api-Key %q, want the credential's value alone", v)
	}
	for _, h := range []string{"Proxy-Authorization", "X-Hop", "X-Forwarded-For"} {
		if v := s.header.Get(h); v != "" {
			t.Errorf("upstream got %s: %q", h, v)
		}
	}
	if s.header.Get("X-Kept") != "2" {
		t.Errorf("upstream lost X-Kept: %v", s.header)
	}
	wantHost := "example.com:" + strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	if s.path != "/v1/things%2Fone" || s.query != "q=1&r=two" || s.host != wantHost || s.body != "payload" {
		t.Errorf("upstream got %s %s?%s with body %q", s.host, s.path, s.query, s.body)
	}
	assertNoSecret(t, g)
}

func TestRouteGoesThroughTheProxysChecks(t *testing.T) {
	srv, roots := tlsUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("the upstream was reached")
	}))
	// example.com resolves to loopback, and nothing lists it under private.
	g := start(t, routeConfig(srv, roots, false))
	resp, err := http.Get("http://" + g.route + "/api/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("route to a closed address: %s, want 502", resp.Status)
	}
	dest := "example.com:" + strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	g.lastRefusal(dest, RulePrivateRange)
	assertNoSecret(t, g)
}

func TestRouteStreamsServerSentEvents(t *testing.T) {
	next := make(chan struct{})
	srv, roots := tlsUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-next:
		case <-r.Context().Done():
			return
		case <-time.After(10 * time.Second):
		}
		_, _ = io.WriteString(w, "data: two\n\n")
	}))
	g := start(t, routeConfig(srv, roots, true))
	resp, err := http.Get("http://" + g.route + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := bufio.NewReader(resp.Body)
	first := make(chan string, 1)
	go func() {
		line, _ := events.ReadString('\n')
		first <- line
	}()
	// The second event is sent only once the first has arrived.
	select {
	case line := <-first:
		if line != "data: one\n" {
			t.Fatalf("first line %q", line)
		}
	case <-time.After(5 * time.Second):
		close(next)
		t.Fatal("the first event did not arrive before the stream went on: the route buffers")
	}
	close(next)
	rest, _ := io.ReadAll(events)
	if string(rest) != "\ndata: two\n\n" {
		t.Errorf("rest of the stream %q", rest)
	}
}

func TestUnknownRouteAndHealth(t *testing.T) {
	srv, roots := tlsUpstream(t, http.NotFoundHandler())
	g := start(t, routeConfig(srv, roots, true))
	resp, err := http.Get("http://" + g.route + "/nope/x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `no route "nope"`) || !strings.Contains(string(body), "api") {
		t.Errorf("unknown route: %s %q", resp.Status, body)
	}

	resp, err = http.Get("http://" + g.route + healthPath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok" {
		t.Errorf("health: %s %q", resp.Status, body)
	}
	if err := checkHealth(context.Background(), g.route); err != nil {
		t.Errorf("checkHealth of a running gate: %v", err)
	}

	ln := listen(t)
	gone := ln.Addr().String()
	ln.Close()
	if err := checkHealth(context.Background(), gone); err == nil {
		t.Error("checkHealth of nothing listening passed")
	}
}

// assertNoSecret fails when the credential's value is in anything the gate
// printed: its refusals or its log.
func assertNoSecret(t *testing.T, g *running) {
	t.Helper()
	for name, out := range map[string]string{"refusals": g.refusals.String(), "log": g.logs.String()} {
		if strings.Contains(out, secret) {
			t.Errorf("the credential's value is in the gate's %s:\n%s", name, out)
		}
	}
}

// listen is a listener on a free loopback port, for a gate under test.
func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
