package gate

import (
	"crypto/tls"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// routes is the handler of the route port: the health check and one
// reverse proxy per credential, by name.
type routes struct {
	byName map[string]http.Handler
	names  []string
}

// routes serves cfg's credentials, reaching their destinations through the
// gate's own proxy at proxyAddr, so that each onward connection passes the
// same checks as the agent's own.
func (g *gate) routes(proxyAddr string, cfg Config) *routes {
	tr := &http.Transport{
		Proxy:               http.ProxyURL(&url.URL{Scheme: "http", Host: proxyAddr}),
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     &tls.Config{RootCAs: cfg.rootCAs, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:   true,
		TLSHandshakeTimeout: 10 * time.Second,
		IdleConnTimeout:     90 * time.Second,
		MaxIdleConnsPerHost: 16,
	}
	rt := &routes{byName: map[string]http.Handler{}}
	for _, c := range g.policy.credentials {
		rt.byName[c.Name] = g.route(c, tr)
		rt.names = append(rt.names, c.Name)
	}
	slices.Sort(rt.names)
	return rt
}

func (rt *routes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == healthPath {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
		return
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	h, ok := rt.byName[name]
	if !ok {
		known := "the gate has no routes"
		if len(rt.names) > 0 {
			known = "the gate's routes: " + strings.Join(rt.names, ", ")
		}
		http.Error(w, fmt.Sprintf("no route %q; %s", name, known), http.StatusNotFound)
		return
	}
	h.ServeHTTP(w, r)
}

// route forwards /NAME/rest?query to https://HOST[:PORT]/rest?query with the
// credential's header in place of any the client sent, streaming both ways
// (each write of the response is flushed: server-sent events arrive as sent).
// httputil.ReverseProxy drops the hop-by-hop headers, Proxy-Authorization
// among them, and with Rewrite it adds no X-Forwarded-For.
func (g *gate) route(c credential, tr http.RoundTripper) http.Handler {
	authority := c.host
	if c.port != 443 {
		authority = net.JoinHostPort(c.host, strconv.Itoa(c.port))
	}
	prefix := "/" + c.Name
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			rest := strings.TrimPrefix(pr.In.URL.EscapedPath(), prefix)
			if rest == "" {
				rest = "/"
			}
			path, err := url.PathUnescape(rest)
			if err != nil {
				path = rest // EscapedPath is valid: not reached
			}
			pr.Out.URL = &url.URL{Scheme: "https", Host: authority, Path: path, RawPath: rest, RawQuery: pr.In.URL.RawQuery}
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
			fmt.Fprintf(g.logs, "gate: route %s to %s: %v\n", c.Name, authority, err)
			http.Error(w, fmt.Sprintf("the gate could not forward route %s to %s: %v", c.Name, authority, err), http.StatusBadGateway)
		},
	}
}
