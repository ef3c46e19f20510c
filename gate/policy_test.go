package gate

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestPolicy(t *testing.T) {
	cred := Credential{Name: "anthropic", Host: "api.anthropic.com", Header: "x-api-key", Value: secret}
	list := Config{
		Egress: EgressList,
		Allow: []Rule{
			{Host: "registry.npmjs.org"},
			{Host: "*.github.com"},
			{Host: "pypi.org", Port: 443},
			{CIDR: "198.51.100.7", Port: 8080},
			{CIDR: "203.0.113.0/24"},
		},
		Private:     []Rule{{CIDR: "192.168.1.10/32", Port: 5432}, {Host: "db.internal"}},
		Credentials: []Credential{cred},
	}
	open := Config{Egress: EgressOpen}
	none := Config{Egress: EgressNone, Private: list.Private, Credentials: list.Credentials}

	for _, tc := range []struct {
		cfg    Config
		req    string // "CONNECT host:port" or an absolute URL for GET
		header http.Header
		want   string // "" allowed, else the refusal's rule
	}{
		{open, "CONNECT example.org:443", nil, ""},
		{open, "http://example.org/", nil, ""},
		{open, "CONNECT 10.0.0.1:22", nil, ""}, // addresses are smokescreen's to refuse
		{open, "CONNECT example.org:443", http.Header{"X-Upstream-Https-Proxy": {"https://p.example:443"}}, RuleUpstreamProxy},
		{open, "CONNECT [2001:db8::1]:443", nil, RuleNotAllowed},

		{none, "CONNECT example.org:443", nil, RuleNone},
		{none, "CONNECT api.anthropic.com:443", nil, ""}, // a credential's destination
		{none, "CONNECT api.anthropic.com:8443", nil, RuleNone},
		{none, "CONNECT 192.168.1.10:5432", nil, ""}, // listed under private
		{none, "CONNECT 192.168.1.10:5433", nil, RuleNone},
		{none, "CONNECT db.internal:5432", nil, ""},

		{list, "CONNECT registry.npmjs.org:443", nil, ""},
		{list, "http://registry.npmjs.org/x", nil, ""},
		{list, "CONNECT REGISTRY.npmjs.org.:443", nil, ""},
		{list, "CONNECT npmjs.org:443", nil, RuleNotAllowed},
		{list, "CONNECT api.github.com:443", nil, ""},
		{list, "CONNECT a.b.github.com:22", nil, ""},
		{list, "CONNECT github.com:443", nil, RuleNotAllowed}, // the apex is not under *.github.com
		{list, "CONNECT evilgithub.com:443", nil, RuleNotAllowed},
		{list, "CONNECT pypi.org:443", nil, ""},
		{list, "http://pypi.org/", nil, RuleNotAllowed}, // port 80
		{list, "CONNECT 198.51.100.7:8080", nil, ""},
		{list, "CONNECT 198.51.100.7:8081", nil, RuleNotAllowed},
		{list, "CONNECT 203.0.113.99:443", nil, ""},
		{list, "CONNECT 203.0.114.1:443", nil, RuleNotAllowed},
		{list, "CONNECT api.anthropic.com:443", nil, ""},
	} {
		c, err := compile(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		req := proxyRequest(t, tc.req)
		if tc.header != nil {
			req.Header = tc.header
		}
		d, err := destinationOf(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.req, err)
		}
		v := c.decide(d, req.Header)
		switch {
		case tc.want == "" && !v.allowed:
			t.Errorf("%s %s: refused (%s: %s), want allowed", tc.cfg.Egress, tc.req, v.rule, v.reason)
		case tc.want != "" && (v.allowed || v.rule != tc.want):
			t.Errorf("%s %s: allowed=%v rule %q, want refused by %q", tc.cfg.Egress, tc.req, v.allowed, v.rule, tc.want)
		}
	}
}

// proxyRequest is a request as the proxy receives it: "CONNECT host:port"
// or an absolute URL, for GET.
func proxyRequest(t *testing.T, s string) *http.Request {
	t.Helper()
	if target, ok := strings.CutPrefix(s, "CONNECT "); ok {
		return &http.Request{Method: http.MethodConnect, Host: target, URL: &url.URL{Host: target}, Header: http.Header{}}
	}
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Request{Method: http.MethodGet, Host: u.Host, URL: u, Header: http.Header{}}
}
