package gate

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A CONNECT to a credential's destination is not a tunnel: the gate ends
// the agent's TLS there with a certificate of its authority (which the
// agent trusts), and sends each request on over TLS of its own with the
// credential's header, as a route does. Every other CONNECT stays a tunnel
// the gate cannot read.
//
// The onward connection is the routes' own: a CONNECT to the gate's proxy
// port, which decides, resolves and refuses as it does for the agent, then
// TLS checked against the system's roots or the credential's CA. The
// gate's own CONNECTs carry onwardHeader with a token only this process
// knows, so that the proxy tunnels them rather than end them again.

// onwardHeader marks a CONNECT the gate itself sends to its proxy.
const onwardHeader = "X-Boxes-Gate-Onward"

// CAPath is where the route port serves the gate's authority's certificate
// (PEM), for the agent to trust; 404 when the box has no credential, and
// so no TLS the gate ends.
const CAPath = "/_ca.pem"

// newToken is 16 random bytes in hex.
func newToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making the gate's token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// isOnward reports whether r is a CONNECT of the gate's own (its token in
// onwardHeader), and removes the header whoever sent it.
func (g *gate) isOnward(r *http.Request) bool {
	v := r.Header.Values(onwardHeader)
	if len(v) == 0 {
		return false
	}
	r.Header.Del(onwardHeader)
	return len(v) == 1 && subtle.ConstantTimeCompare([]byte(v[0]), []byte(g.token)) == 1
}

// transports are the credentials' onward transports, by name: one each,
// shared by its route and its intercepted CONNECTs, so that their
// connections to the destination are reused. Each reaches the destination
// through the gate's own proxy (a CONNECT with the gate's token, which
// the proxy decides and checks as any other), then makes TLS with it.
func (g *gate) transports(cfg Config) map[string]*http.Transport {
	proxy := &url.URL{Scheme: "http", Host: g.proxyAddr}
	out := map[string]*http.Transport{}
	for _, c := range g.policy.credentials {
		roots := c.roots
		if roots == nil {
			roots = cfg.rootCAs // nil: the system's
		}
		out[c.Name] = &http.Transport{
			Proxy:              http.ProxyURL(proxy),
			ProxyConnectHeader: http.Header{onwardHeader: {g.token}},
			OnProxyConnectResponse: func(_ context.Context, _ *url.URL, _ *http.Request, resp *http.Response) error {
				if resp.StatusCode == http.StatusOK {
					return nil
				}
				if msg := resp.Header.Get(smokescreenErrorHeader); msg != "" {
					return &refusedError{msg: msg}
				}
				return &refusedError{msg: "the gate's proxy answered " + resp.Status}
			},
			DialContext: (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSClientConfig: &tls.Config{
				MinVersion: tls.VersionTLS12,
				// Verified by verifyUpstream, as crypto/tls would, so that
				// a certificate that does not verify is a refusal too.
				InsecureSkipVerify: true,
				VerifyConnection:   g.verifyUpstream(c, roots),
			},
			ForceAttemptHTTP2:   true,
			TLSHandshakeTimeout: 10 * time.Second,
			IdleConnTimeout:     90 * time.Second,
			MaxIdleConnsPerHost: 16,
		}
	}
	return out
}

// refusedError is the proxy's refusal of an onward CONNECT, with its reason.
type refusedError struct{ msg string }

func (e *refusedError) Error() string { return e.msg }

// verifyUpstream checks the certificate credential c's destination
// presented against roots (nil: the system's) and the destination's host,
// as crypto/tls does; one that does not verify is refused, and written as
// a refusal.
func (g *gate) verifyUpstream(c credential, roots *x509.CertPool) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		err := errors.New("it presented no certificate")
		if len(cs.PeerCertificates) > 0 {
			// The credential's host, not cs.ServerName: that is empty for
			// an address, which sends no server name.
			opts := x509.VerifyOptions{DNSName: c.host, Roots: roots, Intermediates: x509.NewCertPool()}
			for _, cert := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(cert)
			}
			_, err = cs.PeerCertificates[0].Verify(opts)
		}
		if err == nil {
			return nil
		}
		against := "the system's roots"
		if c.roots != nil {
			against = fmt.Sprintf("credential %s's ca:", c.Name)
		}
		dest := destination{host: c.host, port: c.port}.String()
		reason := fmt.Sprintf("%s presented a certificate the gate does not trust (checked against %s): %v", dest, against, err)
		g.refusals.write(Refusal{Destination: dest, Rule: RuleUntrusted, Reason: reason})
		return errors.New(reason)
	}
}

// bufferedConn is a connection whose first bytes were read into r.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// intercept answers the agent's CONNECT to credential c's destination: the
// tunnel it asked for, but ended here with TLS under a certificate of the
// gate's authority, each request in it sent on with the credential. HTTP/2
// and HTTP/1.1 are both offered, to the agent and to the destination.
func (g *gate) intercept(w http.ResponseWriter, c credential) {
	leaf, err := g.authority.leaf(c.host)
	if err != nil {
		fmt.Fprintf(g.logs, "gate: %v\n", err)
		http.Error(w, "the gate could not make a certificate for "+c.host, http.StatusInternalServerError)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "the gate cannot take this connection over", http.StatusInternalServerError)
		return
	}
	conn, brw, err := hj.Hijack()
	if err != nil {
		return
	}
	// The proxy's server set deadlines for reading the CONNECT; the
	// interception's server sets its own.
	_ = conn.SetDeadline(time.Time{})
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		conn.Close()
		return
	}
	var raw net.Conn = conn
	if brw.Reader.Buffered() > 0 {
		raw = &bufferedConn{Conn: conn, r: brw.Reader}
	}
	tc := tls.Server(raw, &tls.Config{
		Certificates: []tls.Certificate{*leaf},
		NextProtos:   []string{"h2", "http/1.1"},
		MinVersion:   tls.VersionTLS12,
	})
	g.ended.Store(tc, c)
	if !g.tunnels.push(tc) {
		g.ended.Delete(tc)
		tc.Close()
	}
}

// credentialKey is the context key of an intercepted connection's credential.
type credentialKey struct{}

// interceptServer serves the intercepted connections: each request goes
// to its credential's destination with the header.
func (g *gate) interceptServer(errorLog *log.Logger) *http.Server {
	forward := map[string]http.Handler{}
	for _, c := range g.policy.credentials {
		forward[c.Name] = g.forward(c, g.onwardTransport[c.Name], "")
	}
	return &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, ok := r.Context().Value(credentialKey{}).(credential)
			if !ok {
				http.Error(w, "no credential for this connection", http.StatusInternalServerError)
				return
			}
			forward[c.Name].ServeHTTP(w, r)
		}),
		ConnContext: func(ctx context.Context, conn net.Conn) context.Context {
			if c, ok := g.ended.LoadAndDelete(conn); ok {
				return context.WithValue(ctx, credentialKey{}, c)
			}
			return ctx
		},
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       90 * time.Second,
		ErrorLog:          errorLog,
	}
}

// forward sends each request to credential c's destination over tr, with
// the credential's header in place of any the client sent, streaming both
// ways (each write of the response is flushed: server-sent events arrive
// as sent). The path is the request's, less strip (a route's /NAME).
// httputil.ReverseProxy drops the hop-by-hop headers, Proxy-Authorization
// among them, and with Rewrite it adds no X-Forwarded-For; the Host is the
// destination's, whatever the client said.
func (g *gate) forward(c credential, tr http.RoundTripper, strip string) http.Handler {
	authority := c.host
	if c.port != 443 {
		authority = net.JoinHostPort(c.host, strconv.Itoa(c.port))
	}
	what := "credential " + c.Name
	if strip != "" {
		what = "route " + c.Name
	}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			u := pr.In.URL
			path, raw := u.Path, u.RawPath
			if strip != "" {
				rest := strings.TrimPrefix(u.EscapedPath(), strip)
				if rest == "" {
					rest = "/"
				}
				p, err := url.PathUnescape(rest)
				if err != nil {
					p = rest // EscapedPath is valid: not reached
				}
				path, raw = p, rest
			}
			if path == "" {
				path, raw = "/", ""
			}
			pr.Out.URL = &url.URL{Scheme: "https", Host: authority, Path: path, RawPath: raw, RawQuery: u.RawQuery}
			pr.Out.Host = ""
			pr.Out.Header.Set(c.Header, c.Value)
		},
		Transport:     tr,
		FlushInterval: -1,
		ErrorLog:      log.New(g.logs, "gate: ", log.LstdFlags),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the client went away
			}
			fmt.Fprintf(g.logs, "gate: %s to %s: %v\n", what, authority, err)
			http.Error(w, fmt.Sprintf("the gate could not forward %s to %s: %v", what, authority, err), http.StatusBadGateway)
		},
	}
}

// tunnelListener hands the intercepted connections to their server.
type tunnelListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newTunnelListener() *tunnelListener {
	return &tunnelListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// push hands c to the server; false once the listener is closed.
func (l *tunnelListener) push(c net.Conn) bool {
	select {
	case <-l.done:
		return false
	case l.conns <- c:
		return true
	}
}

func (l *tunnelListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *tunnelListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *tunnelListener) Addr() net.Addr { return tunnelAddr{} }

type tunnelAddr struct{}

func (tunnelAddr) Network() string { return "intercepted" }
func (tunnelAddr) String() string  { return "intercepted" }
