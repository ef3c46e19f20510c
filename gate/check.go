package gate

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stripe/smokescreen/pkg/smokescreen"
	"github.com/stripe/smokescreen/pkg/smokescreen/hostport"
)

// Answer is what a gate does with one request, as Check tells it.
type Answer struct {
	// Destination is host:port, as the gate reads the request's.
	Destination string
	Allowed     bool
	// Rule is a refusal's rule, one of the Rule… words; "" when allowed.
	Rule string
	// Reason is a sentence for a person: why it is allowed or refused.
	Reason string
	// By is the entry of the Config that allows it; zero when refused.
	By Match
	// Address is where the gate would connect: the destination's own
	// address, or the one its name resolved to; "" for a name not
	// resolved, and for a refusal.
	Address string
	// Opened is the Private rule that opens Address, which is in a range
	// closed unless listed; nil for a public address.
	Opened *Rule
}

// TargetError is a URL Check cannot ask about, with what to give instead.
type TargetError struct {
	msg, hint string
}

func (e *TargetError) Error() string { return e.msg }

// Hint is what to give instead.
func (e *TargetError) Hint() string { return e.hint }

const targetHint = "give the URL a tool in the box would ask for, such as https://api.github.com/ or http://198.51.100.7:8080/"

// target reads raw as the request a tool sends through the gate for it: a
// CONNECT to its host and port for https, a plain proxy request for http.
// Its host and port must read as the gate reads an authority.
func target(ctx context.Context, raw string) (*http.Request, error) {
	bad := func(hint, format string, args ...any) (*http.Request, error) {
		return nil, &TargetError{msg: fmt.Sprintf(format, args...), hint: hint}
	}
	if strings.TrimSpace(raw) == "" {
		return bad(targetHint, "no URL to check")
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return bad(targetHint, "%q is not a URL: %v", raw, err)
	}
	scheme := strings.ToLower(u.Scheme)
	switch {
	case u.Scheme == "":
		return bad("write it with its scheme: https://"+strings.TrimPrefix(raw, "//"), "%q is not a URL: it has no scheme", raw)
	case u.Opaque != "" && (strings.Contains(u.Scheme, ".") || isPort(u.Opaque)):
		// host:port, read by url.Parse as a scheme and what follows it.
		return bad("write it with its scheme: https://"+raw, "%q is not a URL: it has no scheme", raw)
	case scheme != "http" && scheme != "https":
		return bad("the gate decides by host and port: ask about https://HOST:PORT/ for another protocol", "%q: the gate carries http and https, not %s", raw, u.Scheme)
	case u.Hostname() == "":
		return bad(targetHint, "%q names no host", raw)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	authority := net.JoinHostPort(u.Hostname(), port)
	hp, err := hostport.New(authority, false)
	if err != nil {
		return bad(targetHint, "%q: the gate cannot read its host and port: %v", raw, err)
	}
	if hp.Port == 0 {
		return bad("a port is a number from 1 to 65535", "%q: port 0 is not a port a request can reach", raw)
	}
	var req *http.Request
	if scheme == "https" {
		req = &http.Request{Method: http.MethodConnect, URL: &url.URL{Host: authority}, Host: authority, RequestURI: authority,
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{}}
		req = req.WithContext(ctx)
	} else {
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, (&url.URL{Scheme: "http", Host: u.Host, Path: "/"}).String(), nil)
		if err != nil {
			return bad(targetHint, "%q: %v", raw, err)
		}
		req.RequestURI = req.URL.String()
	}
	req.RemoteAddr = "127.0.0.1:1"
	return req, nil
}

// isPort reports whether s is all digits, as a port is written.
func isPort(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// errNotDialed is what the checking gate's proxy meets in place of a
// connection: the request was allowed, and goes nowhere.
var errNotDialed = errors.New("checked: not connected")

// Check answers whether the gate made from cfg lets a request for the URL
// raw through, and why, without sending anything anywhere: the gate's own
// proxy (its policy, smokescreen's checks of the address, its refusals)
// handles the request in-process, with a dialer that notes the address it
// would connect to in place of connecting. With resolve, a name is
// resolved as the gate resolves it, with this machine's resolver; without,
// it is not, and the answer about it is the rules' alone (the gate still
// refuses it at an address it closes). A bad URL is a *TargetError.
func Check(ctx context.Context, cfg Config, raw string, resolve bool) (Answer, error) {
	policy, err := compile(cfg)
	if err != nil {
		return Answer{}, err
	}
	req, err := target(ctx, raw)
	if err != nil {
		return Answer{}, err
	}
	var refusals bytes.Buffer
	var mu sync.Mutex
	var dialed string
	unresolved := &noResolver{}
	g := &gate{policy: &policy, refusals: &refusalLog{w: &refusals}, logs: io.Discard, resolver: cfg.resolver,
		dial: func(_ context.Context, _, addr string, _ time.Duration) (net.Conn, error) {
			mu.Lock()
			dialed = addr
			mu.Unlock()
			return nil, errNotDialed
		}}
	if !resolve {
		g.resolver = unresolved
	}
	// Port 0: the checking proxy is no gate's own address, which a real
	// gate refuses to connect to (its container's, closed anyway).
	serve(g.proxy(&net.TCPAddr{}), req)

	got, err := ParseRefusals(&refusals)
	if err != nil {
		return Answer{}, err
	}
	mu.Lock()
	addr := dialed
	mu.Unlock()
	if len(got) > 0 {
		r := got[len(got)-1]
		return Answer{Destination: r.Destination, Rule: r.Rule, Reason: r.Reason}, nil
	}
	// Allowed: the proxy read the destination as the policy reads it.
	d, err := destinationOf(req)
	if err != nil {
		return Answer{}, fmt.Errorf("the gate let %s through without reading it: %w", req.Host, err)
	}
	a := Answer{Destination: d.String()}
	if addr == "" && !unresolved.wasAsked() {
		return a, fmt.Errorf("the gate gave no answer about %s", d)
	}
	v := policy.decide(d, req.Header)
	if !v.allowed {
		// The proxy went on to connect: it and the policy disagree.
		return a, fmt.Errorf("the gate's policy refuses %s, which its proxy let through", d)
	}
	a.Allowed, a.By, a.Reason = true, v.by, v.reason
	if addr != "" {
		host, _, _ := net.SplitHostPort(addr)
		if ip, err := netip.ParseAddr(host); err == nil {
			ip = ip.Unmap()
			a.Address = ip.String()
			if r, ok := policy.openedBy(d, ip); ok && !(v.by.Setting == ByPrivate && v.by.Rule == r) {
				a.Opened = &r
			}
		}
	}
	return a, nil
}

// serve has h handle req as a proxy server would: a CONNECT on a
// connection it takes over (an in-memory pipe, whose other end is read and
// dropped), a plain request with a recorded response.
func serve(h http.Handler, req *http.Request) {
	if req.Method != http.MethodConnect {
		h.ServeHTTP(httptest.NewRecorder(), req)
		return
	}
	client, server := net.Pipe()
	drained := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, client)
		close(drained)
	}()
	h.ServeHTTP(&hijackable{conn: server, header: http.Header{}}, req)
	_ = server.Close()
	<-drained
	_ = client.Close()
}

// hijackable is a ResponseWriter whose connection a CONNECT takes over.
type hijackable struct {
	conn   net.Conn
	header http.Header
}

func (h *hijackable) Header() http.Header         { return h.header }
func (h *hijackable) Write(b []byte) (int, error) { return h.conn.Write(b) }
func (h *hijackable) WriteHeader(int)             {}

func (h *hijackable) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return h.conn, bufio.NewReadWriter(bufio.NewReader(h.conn), bufio.NewWriter(h.conn)), nil
}

// noResolver resolves nothing but addresses: a name is left to the gate.
type noResolver struct {
	mu    sync.Mutex
	asked bool
}

var _ smokescreen.Resolver = (*noResolver)(nil)

var errNotResolved = errors.New("not resolved by the check")

func (n *noResolver) LookupIP(_ context.Context, _, host string) ([]net.IP, error) {
	if ip := net.ParseIP(host); ip != nil {
		return []net.IP{ip}, nil
	}
	n.mu.Lock()
	n.asked = true
	n.mu.Unlock()
	return nil, errNotResolved
}

func (n *noResolver) wasAsked() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.asked
}

func (n *noResolver) LookupPort(_ context.Context, _, service string) (int, error) {
	return strconv.Atoi(service)
}

// openedBy is the Private rule that lets the gate connect to a, which d is
// or resolved to, when a is in a range the gate closes unless listed.
func (c *compiled) openedBy(d destination, a netip.Addr) (Rule, bool) {
	if held, _ := ClosedRanges(netip.PrefixFrom(a, a.BitLen())); len(held) == 0 {
		return Rule{}, false
	}
	for _, r := range c.private {
		if r.host == "" && r.prefix.Contains(a) && (r.port == 0 || r.port == d.port) {
			return r.src, true
		}
	}
	for _, r := range c.private {
		if r.host != "" && r.matches(d) {
			return r.src, true
		}
	}
	return Rule{}, false
}
