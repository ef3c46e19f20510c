package gate

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// routes is the handler of the route port: the health check, the
// authority's certificate and one reverse proxy per credential, by name.
type routes struct {
	byName map[string]http.Handler
	names  []string
	ca     []byte // the authority's certificate (PEM); nil without one
}

// routes serves the credentials' routes, each forwarding /NAME/rest to
// https://DESTINATION/rest over the credential's onward transport.
func (g *gate) routes() *routes {
	rt := &routes{byName: map[string]http.Handler{}}
	if g.authority != nil {
		rt.ca = g.authority.certPEM
	}
	for _, c := range g.policy.credentials {
		rt.byName[c.Name] = g.forward(c, g.onwardTransport[c.Name], "/"+c.Name)
		rt.names = append(rt.names, c.Name)
	}
	slices.Sort(rt.names)
	return rt
}

func (rt *routes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case healthPath:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
		return
	case CAPath:
		if rt.ca == nil {
			http.Error(w, "the gate ends no TLS: the box has no credential, so it has no authority to trust", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/x-pem-file")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(rt.ca)
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
