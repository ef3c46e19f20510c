package gate

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// testCA is a certificate authority of a test's own, standing in for a
// private CA a credential's ca: names, or for one that forges.
type testCA struct {
	key  *ecdsa.PrivateKey
	cert *x509.Certificate
	pem  string
}

func newTestCA(t testing.TB, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{key: key, cert: cert, pem: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}
}

func (ca *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// serverCert is a certificate for names signed by ca.
func (ca *testCA) serverCert(t testing.TB, names ...string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: names[0]},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// upstream is an HTTPS server with a certificate of its own for its name,
// keeping what it was sent.
type upstream struct {
	*httptest.Server
	cert tls.Certificate
	mu   sync.Mutex
	seen []*http.Request
}

// newUpstream serves HTTPS for name with a certificate from ca, HTTP/2
// offered when h2.
func newUpstream(t testing.TB, ca *testCA, name string, h2 bool) *upstream {
	t.Helper()
	u := &upstream{cert: ca.serverCert(t, name)}
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		u.mu.Lock()
		u.seen = append(u.seen, r.Clone(r.Context()))
		u.mu.Unlock()
		fmt.Fprintf(w, "hello from %s over %s", name, r.Proto)
	}))
	u.EnableHTTP2 = h2
	u.TLS = &tls.Config{Certificates: []tls.Certificate{u.cert}}
	// The gate ends the handshake of a certificate it does not trust.
	u.Config.ErrorLog = log.New(io.Discard, "", 0)
	u.StartTLS()
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) port() int { return u.Listener.Addr().(*net.TCPAddr).Port }

func (u *upstream) requests() []*http.Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]*http.Request(nil), u.seen...)
}

// httpsConfig is a gate with credential "api" to api.test on u's port,
// api.test and other.test resolving to loopback and opened by private.
func httpsConfig(u *upstream, ca string) Config {
	return Config{
		Egress:      EgressOpen,
		Private:     []Rule{{Host: "api.test"}, {Host: "other.test"}},
		Credentials: []Credential{{Name: "api", Host: "api.test", Port: u.port(), Header: "X-Api-Key", Value: secret, CA: ca}},
		resolver:    dns(map[string][]string{"api.test": {"127.0.0.1"}, "other.test": {"127.0.0.1"}}),
	}
}

// authorityOf is the gate's authority as the agent fetches it: its route
// port's CAPath.
func (g *running) authorityOf() *x509.Certificate {
	g.t.Helper()
	resp, err := http.Get("http://" + g.route + CAPath)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-pem-file" {
		g.t.Fatalf("GET %s: %s %q", CAPath, resp.Status, body)
	}
	block, rest := pem.Decode(body)
	if block == nil || block.Type != "CERTIFICATE" || len(bytes.TrimSpace(rest)) != 0 {
		g.t.Fatalf("GET %s is not one PEM certificate: %q", CAPath, body)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil || !cert.IsCA {
		g.t.Fatalf("GET %s: %v (a CA: %v)", CAPath, err, cert != nil && cert.IsCA)
	}
	return cert
}

// agent is an HTTPS client of the gate's proxy, as the agent's tools are,
// trusting roots; h2 lets it offer HTTP/2.
func (g *running) agent(roots *x509.CertPool, h2 bool) *http.Client {
	tr := &http.Transport{
		Proxy:             http.ProxyURL(&url.URL{Scheme: "http", Host: g.proxy}),
		TLSClientConfig:   &tls.Config{RootCAs: roots},
		ForceAttemptHTTP2: h2,
		DisableKeepAlives: true,
	}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// do sends req through c and returns the response with its body read.
func do(t *testing.T, c *http.Client, method, rawURL string, header http.Header, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, rawURL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, rawURL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestInterceptAddsTheCredentialOverTLS(t *testing.T) {
	ca := newTestCA(t, "private test CA")
	up := newUpstream(t, ca, "api.test", false)
	g := start(t, httpsConfig(up, ca.pem))
	authority := g.authorityOf()
	roots := x509.NewCertPool()
	roots.AddCert(authority)

	target := fmt.Sprintf("https://api.test:%d/v1/things%%2Fone?q=1", up.port())
	resp, body := do(t, g.agent(roots, false), http.MethodPost, target,
		http.Header{"X-Api-Key": {"the-agents-own"}, "X-Kept": {"2"}}, "payload")
	if resp.StatusCode != 200 || body != "hello from api.test over HTTP/1.1" {
		t.Fatalf("through the gate: %s %q", resp.Status, body)
	}
	// The agent saw the gate's certificate for the host, not the upstream's.
	leaf := resp.TLS.PeerCertificates[0]
	if leaf.Issuer.String() != authority.Subject.String() || leaf.VerifyHostname("api.test") != nil || leaf.Equal(up.cert.Leaf) {
		t.Errorf("the agent saw %s issued by %s; want the gate's for api.test", leaf.Subject, leaf.Issuer)
	}
	seen := up.requests()
	if len(seen) != 1 {
		t.Fatalf("upstream saw %d requests", len(seen))
	}
	r := seen[0]
	if v := r.Header.Values("X-Api-Key"); len(v) != 1 || v[0] != secret {
		t.Errorf("upstream got X-Api-Key %q, want the credential's value alone", v)
	}
	if r.Header.Get("X-Kept") != "2" || r.Header.Get("X-Forwarded-For") != "" {
		t.Errorf("upstream got headers %v", r.Header)
	}
	if r.URL.EscapedPath() != "/v1/things%2Fone" || r.URL.RawQuery != "q=1" || r.Host != fmt.Sprintf("api.test:%d", up.port()) || r.Method != http.MethodPost {
		t.Errorf("upstream got %s %s %s?%s", r.Method, r.Host, r.URL.EscapedPath(), r.URL.RawQuery)
	}
	if got := g.refused(); len(got) != 0 {
		t.Errorf("refusals: %+v", got)
	}
	assertNoSecret(t, g)
}

func TestInterceptSpeaksHTTP2AndHTTP1(t *testing.T) {
	ca := newTestCA(t, "private test CA")
	for _, tc := range []struct {
		client, upstream bool // HTTP/2 offered
		want             string
	}{
		{true, true, "HTTP/2.0 over HTTP/2.0"},
		{true, false, "HTTP/2.0 over HTTP/1.1"},
		{false, true, "HTTP/1.1 over HTTP/2.0"},
		{false, false, "HTTP/1.1 over HTTP/1.1"},
	} {
		up := newUpstream(t, ca, "api.test", tc.upstream)
		g := start(t, httpsConfig(up, ca.pem))
		roots := x509.NewCertPool()
		roots.AddCert(g.authorityOf())
		resp, body := do(t, g.agent(roots, tc.client), http.MethodGet, fmt.Sprintf("https://api.test:%d/", up.port()), nil, "")
		got := resp.Proto + " over " + strings.TrimPrefix(body, "hello from api.test over ")
		if resp.StatusCode != 200 || got != tc.want {
			t.Errorf("client h2 %v, upstream h2 %v: %s %q, want %s", tc.client, tc.upstream, resp.Status, got, tc.want)
		}
		if v := up.requests()[0].Header.Values("X-Api-Key"); len(v) != 1 || v[0] != secret {
			t.Errorf("client h2 %v, upstream h2 %v: upstream got X-Api-Key %q", tc.client, tc.upstream, v)
		}
	}
}

func TestInterceptRefusesAForgedUpstream(t *testing.T) {
	trusted := newTestCA(t, "the credential's CA")
	forger := newTestCA(t, "another CA")
	up := newUpstream(t, forger, "api.test", true)
	g := start(t, httpsConfig(up, trusted.pem))
	roots := x509.NewCertPool()
	roots.AddCert(g.authorityOf())
	resp, body := do(t, g.agent(roots, false), http.MethodGet, fmt.Sprintf("https://api.test:%d/", up.port()), nil, "")
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "does not trust") || !strings.Contains(body, "credential api's ca:") {
		t.Errorf("a forged upstream: %s %q, want 502 saying why", resp.Status, body)
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("the forged upstream was sent %d requests", n)
	}
	dest := fmt.Sprintf("api.test:%d", up.port())
	r := g.lastRefusal(dest, RuleUntrusted)
	if !strings.Contains(r.Reason, "unknown authority") {
		t.Errorf("reason %q", r.Reason)
	}

	// The plain-HTTP route to the same destination refuses it alike.
	routeResp, err := http.Get("http://" + g.route + "/api/x")
	if err != nil {
		t.Fatal(err)
	}
	routeBody, _ := io.ReadAll(routeResp.Body)
	routeResp.Body.Close()
	if routeResp.StatusCode != http.StatusBadGateway || !strings.Contains(string(routeBody), "does not trust") {
		t.Errorf("the route to a forged upstream: %s %q", routeResp.Status, routeBody)
	}
	g.lastRefusal(dest, RuleUntrusted)
	assertNoSecret(t, g)
}

func TestInterceptWithoutCAChecksTheSystemRoots(t *testing.T) {
	ca := newTestCA(t, "private test CA")
	up := newUpstream(t, ca, "api.test", false)
	g := start(t, httpsConfig(up, "")) // no ca: the system's roots, which do not hold ca
	roots := x509.NewCertPool()
	roots.AddCert(g.authorityOf())
	resp, body := do(t, g.agent(roots, false), http.MethodGet, fmt.Sprintf("https://api.test:%d/", up.port()), nil, "")
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "the system's roots") {
		t.Errorf("an upstream the system does not trust: %s %q", resp.Status, body)
	}
	g.lastRefusal(fmt.Sprintf("api.test:%d", up.port()), RuleUntrusted)
}

func TestInterceptGoesThroughTheProxysChecks(t *testing.T) {
	ca := newTestCA(t, "private test CA")
	up := newUpstream(t, ca, "api.test", false)
	cfg := httpsConfig(up, ca.pem)
	cfg.Private = nil // api.test resolves to loopback, which stays closed
	g := start(t, cfg)
	roots := x509.NewCertPool()
	roots.AddCert(g.authorityOf())
	resp, body := do(t, g.agent(roots, false), http.MethodGet, fmt.Sprintf("https://api.test:%d/", up.port()), nil, "")
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "127.0.0.1") {
		t.Errorf("a credential's destination at a closed address: %s %q", resp.Status, body)
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("the upstream at a closed address was sent %d requests", n)
	}
	g.lastRefusal(fmt.Sprintf("api.test:%d", up.port()), RulePrivateRange)
	assertNoSecret(t, g)
}

func TestOtherDestinationsStayTunnels(t *testing.T) {
	ca := newTestCA(t, "private test CA")
	api := newUpstream(t, ca, "api.test", false)
	other := newUpstream(t, ca, "other.test", false)
	g := start(t, httpsConfig(api, ca.pem))
	gateRoots := x509.NewCertPool()
	gateRoots.AddCert(g.authorityOf())

	// A host with no credential: the agent sees the upstream's own
	// certificate, and the upstream gets what the agent sent.
	target := fmt.Sprintf("https://other.test:%d/", other.port())
	resp, body := do(t, g.agent(ca.pool(), false), http.MethodGet, target, http.Header{"X-Api-Key": {"the-agents-own"}}, "")
	if resp.StatusCode != 200 || body != "hello from other.test over HTTP/1.1" {
		t.Fatalf("%s: %s %q", target, resp.Status, body)
	}
	if !resp.TLS.PeerCertificates[0].Equal(other.cert.Leaf) {
		t.Errorf("%s: the agent saw %s issued by %s, not the upstream's own", target, resp.TLS.PeerCertificates[0].Subject, resp.TLS.PeerCertificates[0].Issuer)
	}
	if v := other.requests()[0].Header.Values("X-Api-Key"); len(v) != 1 || v[0] != "the-agents-own" {
		t.Errorf("a tunnelled request arrived with X-Api-Key %q", v)
	}
	// Trusting the gate's authority alone does not reach it: nothing of
	// the gate stands in the tunnel.
	c := g.agent(gateRoots, false)
	if _, err := c.Get(fmt.Sprintf("https://other.test:%d/", other.port())); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a tunnel verified with the gate's authority: %v", err)
	}

	// api.test on another port has no credential: a tunnel too.
	cfg := httpsConfig(api, ca.pem)
	cfg.Credentials[0].Port = api.port() + 1
	cfg.resolver = dns(map[string][]string{"api.test": {"127.0.0.1"}})
	g2 := start(t, cfg)
	resp, _ = do(t, g2.agent(ca.pool(), false), http.MethodGet, fmt.Sprintf("https://api.test:%d/", api.port()), nil, "")
	if resp.StatusCode != 200 || !resp.TLS.PeerCertificates[0].Equal(api.cert.Leaf) {
		t.Errorf("the credential's host on another port: %s, certificate %s", resp.Status, resp.TLS.PeerCertificates[0].Subject)
	}
	if v := api.requests()[0].Header.Get("X-Api-Key"); v != "" {
		t.Errorf("the credential's host on another port got X-Api-Key %q", v)
	}
}

func TestAgentCannotImpersonateTheGatesOwnConnect(t *testing.T) {
	ca := newTestCA(t, "private test CA")
	up := newUpstream(t, ca, "api.test", false)
	g := start(t, httpsConfig(up, ca.pem))
	roots := x509.NewCertPool()
	roots.AddCert(g.authorityOf())
	// A CONNECT carrying the gate's marker with a wrong token is ended
	// like any other: the agent cannot have a credential's destination as
	// a raw tunnel by claiming to be the gate.
	tr := &http.Transport{
		Proxy:              http.ProxyURL(&url.URL{Scheme: "http", Host: g.proxy}),
		ProxyConnectHeader: http.Header{onwardHeader: {"0123456789abcdef0123456789abcdef"}},
		TLSClientConfig:    &tls.Config{RootCAs: roots},
	}
	resp, body := do(t, &http.Client{Transport: tr}, http.MethodGet, fmt.Sprintf("https://api.test:%d/", up.port()), nil, "")
	if resp.StatusCode != 200 || resp.TLS.PeerCertificates[0].Issuer.String() != g.authorityOf().Subject.String() {
		t.Errorf("%s %q, issued by %s", resp.Status, body, resp.TLS.PeerCertificates[0].Issuer)
	}
	if v := up.requests()[0].Header.Get("X-Api-Key"); v != secret {
		t.Errorf("upstream got X-Api-Key %q", v)
	}
}

func TestStopEndsInterceptedConnections(t *testing.T) {
	ca := newTestCA(t, "private test CA")
	up := newUpstream(t, ca, "api.test", false)
	cfg := httpsConfig(up, ca.pem)
	cfg.logs = io.Discard
	proxyLn := listen(t)
	routeLn := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, cfg, proxyLn, routeLn, io.Discard) }()
	g := &running{t: t, proxy: proxyLn.Addr().String(), route: routeLn.Addr().String()}
	roots := x509.NewCertPool()
	roots.AddCert(g.authorityOf())

	// An intercepted connection, kept open after one request.
	c, err := net.Dial("tcp", g.proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	target := fmt.Sprintf("api.test:%d", up.port())
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	tc := tls.Client(&bufferedConn{Conn: c, r: br}, &tls.Config{ServerName: "api.test", RootCAs: roots})
	fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", target)
	tr := bufio.NewReader(tc)
	resp, err := http.ReadResponse(tr, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET in the intercepted tunnel: %v %v", resp, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	began := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(grace + 2*time.Second):
		t.Fatal("the gate did not stop with an intercepted connection open")
	}
	if took := time.Since(began); took > grace/2 {
		t.Errorf("stopping took %s with an idle intercepted connection: it waited for it", took)
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := tr.ReadByte(); err == nil {
		t.Error("the intercepted connection is still open after the gate stopped")
	}
}

// A WebSocket's request, which upgrades its connection, goes on over
// HTTP/1.1 whatever the destination offers, and then both ways (the frames
// are the test's own lines: the gate passes bytes).
func TestInterceptCarriesAnUpgrade(t *testing.T) {
	ca := newTestCA(t, "private test CA")
	gotKey := make(chan string, 1)
	up := &upstream{cert: ca.serverCert(t, "api.test")}
	up.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "websocket" {
			http.Error(w, "upgrade to websocket", http.StatusBadRequest)
			return
		}
		gotKey <- r.Header.Get("X-Api-Key")
		conn, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprint(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
		_ = brw.Flush()
		line, _ := brw.ReadString('\n')
		fmt.Fprint(brw, "echo: "+line)
		_ = brw.Flush()
	}))
	up.EnableHTTP2 = true
	up.TLS = &tls.Config{Certificates: []tls.Certificate{up.cert}}
	up.StartTLS()
	t.Cleanup(up.Close)
	g := start(t, httpsConfig(up, ca.pem))
	roots := x509.NewCertPool()
	roots.AddCert(g.authorityOf())

	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("https://api.test:%d/ws", up.port()), nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	client := g.agent(roots, false)
	client.Timeout = 0 // an upgraded body is the connection only without one
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("upgrade: %s %q", resp.Status, body)
	}
	rw := resp.Body.(io.ReadWriteCloser)
	fmt.Fprint(rw, "ping\n")
	got, _ := bufio.NewReader(rw).ReadString('\n')
	if key := <-gotKey; got != "echo: ping\n" || key != secret {
		t.Errorf("through the upgraded connection: %q, upstream X-Api-Key %q", got, key)
	}
}

// A credential to an address: the gate's leaf is for the address, and the
// destination's certificate must name it (a certificate for a name alone,
// however trusted its issuer, is refused).
func TestInterceptToAnAddress(t *testing.T) {
	ca := newTestCA(t, "private test CA")
	for _, tc := range []struct {
		cert string
		ok   bool
	}{{"127.0.0.1", true}, {"api.test", false}} {
		up := newUpstream(t, ca, tc.cert, false)
		g := start(t, Config{
			Egress:      EgressNone,
			Private:     []Rule{{CIDR: "127.0.0.1/32", Port: up.port()}},
			Credentials: []Credential{{Name: "api", Host: "127.0.0.1", Port: up.port(), Header: "X-Api-Key", Value: secret, CA: ca.pem}},
		})
		roots := x509.NewCertPool()
		roots.AddCert(g.authorityOf())
		resp, body := do(t, g.agent(roots, false), http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/", up.port()), nil, "")
		if !tc.ok {
			if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "127.0.0.1") {
				t.Errorf("an upstream whose certificate is for %s: %s %q, want 502", tc.cert, resp.Status, body)
			}
			g.lastRefusal(fmt.Sprintf("127.0.0.1:%d", up.port()), RuleUntrusted)
			continue
		}
		if resp.StatusCode != 200 || resp.TLS.PeerCertificates[0].IPAddresses[0].String() != "127.0.0.1" {
			t.Errorf("an upstream whose certificate is for %s: %s %q", tc.cert, resp.Status, body)
		}
		if v := up.requests()[0].Header.Get("X-Api-Key"); v != secret {
			t.Errorf("upstream got X-Api-Key %q", v)
		}
	}
}
