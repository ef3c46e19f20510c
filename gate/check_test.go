package gate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// checkConfigs are the gates the check is compared on, for a server on
// loopback port p: a list, open, and none. Every destination a row allows
// resolves to loopback on p, opened by a private exception, so that the
// real gate reaches the test's server and nothing else.
func checkConfigs(p int) map[string]Config {
	names := map[string][]string{}
	for _, n := range []string{"api.test", "other.test", "x.wild.test", "wild.test", "port.test", "db.test", "cred.test", "open.test", "loop.test"} {
		names[n] = []string{"127.0.0.1"}
	}
	names["intranet.test"] = []string{"10.0.0.5"}
	names["machine.test"] = []string{"198.51.100.77"}
	resolver := dns(names)
	loopback := Rule{CIDR: "127.0.0.1/32", Port: p}
	cred := Credential{Name: "api", Host: "cred.test", Port: p, Header: "X-Key", Value: secret}
	return map[string]Config{
		"list": {
			Egress: EgressList,
			Allow: []Rule{
				{Host: "api.test"}, {Host: "*.wild.test"}, {Host: "port.test", Port: p},
				{Host: "intranet.test"}, {Host: "machine.test"},
			},
			Private:     []Rule{loopback, {Host: "db.test", Port: p}, {CIDR: "198.51.100.0/24", Port: 443}},
			Closed:      []string{"198.51.100.77/32"},
			Credentials: []Credential{cred},
			resolver:    resolver,
		},
		"open": {
			Egress:   EgressOpen,
			Private:  []Rule{loopback},
			Closed:   []string{"198.51.100.77/32"},
			resolver: resolver,
		},
		"none": {
			Egress:      EgressNone,
			Private:     []Rule{loopback},
			Credentials: []Credential{cred},
			resolver:    resolver,
		},
	}
}

// The answer Check gives without sending anything is the one the gate
// gives a request: for each URL, the real gate on loopback (its proxy, the
// upstream a test server) and Check on the same configuration agree on
// allowed or refused, on the rule and the reason of a refusal; and both
// agree with what the rules mean, written out here.
func TestCheckAnswersAsTheGate(t *testing.T) {
	srv := newHello(t)
	p := srv.port()
	at := func(format string) string { return fmt.Sprintf(format, p) }
	type want struct {
		by     string // Match.Setting when allowed
		byRule Rule
		rule   string // the refusal's rule when refused
		opened bool   // allowed at loopback, opened by the private exception
	}
	allowedBy := func(setting string, r Rule) want { return want{by: setting, byRule: r, opened: true} }
	refused := func(rule string) want { return want{rule: rule} }
	loopback := Rule{CIDR: "127.0.0.1/32", Port: p}
	rows := []struct {
		cfg, url string
		want     want
	}{
		// A host listed under egress, by name, any case; one not listed.
		{"list", at("https://api.test:%d/"), allowedBy(ByEgress, Rule{Host: "api.test"})},
		{"list", at("http://API.test:%d/v1?q=1"), allowedBy(ByEgress, Rule{Host: "api.test"})},
		{"list", at("https://other.test:%d/"), refused(RuleNotAllowed)},
		// A wildcard: the names under it, not the domain itself.
		{"list", at("https://x.wild.test:%d/"), allowedBy(ByEgress, Rule{Host: "*.wild.test"})},
		{"list", at("https://wild.test:%d/"), refused(RuleNotAllowed)},
		// A rule on one port: that port, not another.
		{"list", at("http://port.test:%d/"), allowedBy(ByEgress, Rule{Host: "port.test", Port: p})},
		{"list", fmt.Sprintf("http://port.test:%d/", p+1), refused(RuleNotAllowed)},
		// A listed name at a private address is closed by default.
		{"list", "https://intranet.test/", refused(RulePrivateRange)},
		{"open", "http://10.0.0.5:8080/", refused(RulePrivateRange)},
		{"open", "http://169.254.169.254/latest/meta-data/", refused(RulePrivateRange)},
		{"open", "https://loop.test/", refused(RulePrivateRange)},
		// private: opens an address on its port, and a name.
		{"list", at("http://127.0.0.1:%d/"), want{by: ByPrivate, byRule: loopback}},
		{"list", fmt.Sprintf("http://127.0.0.1:%d/", p+1), refused(RuleNotAllowed)},
		{"list", at("https://db.test:%d/"), allowedBy(ByPrivate, Rule{Host: "db.test", Port: p})},
		// The engine machine's addresses: closed whatever the rules say.
		{"list", "https://machine.test/", refused(RuleClosed)},
		{"list", "https://198.51.100.77/", refused(RuleClosed)},
		{"open", "https://198.51.100.77/", refused(RuleClosed)},
		// A credential's destination is allowed by that fact.
		{"list", at("http://cred.test:%d/"), allowedBy(ByCredential, Rule{})},
		{"none", at("https://cred.test:%d/"), allowedBy(ByCredential, Rule{})},
		{"none", at("https://api.test:%d/"), refused(RuleNone)},
		// Open: any public address; a name must resolve.
		{"open", at("https://open.test:%d/"), allowedBy(ByOpen, Rule{})},
		{"open", "https://nowhere.test/", refused(RuleResolveFailed)},
		// IPv6 literals: by name only.
		{"open", "https://[2001:db8::1]/", refused(RuleNotAllowed)},
		{"list", at("http://[::1]:%d/"), refused(RuleNotAllowed)},
		{"open", "http://[2001:db8::1]/", refused(RuleNotAllowed)}, // smokescreen cannot read it
	}
	gates := map[string]*running{}
	for name, cfg := range checkConfigs(p) {
		gates[name] = start(t, cfg)
	}
	for _, row := range rows {
		t.Run(row.cfg+" "+row.url, func(t *testing.T) {
			g := gates[row.cfg]
			before := len(g.refused())
			code := realAsk(t, g, row.url, row.want.by == ByCredential)
			refusals := g.refused()

			got, err := Check(context.Background(), checkConfigs(p)[row.cfg], row.url, true)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			switch {
			case code == http.StatusOK:
				if len(refusals) != before {
					t.Fatalf("the gate let it through and refused it: %+v", refusals[before:])
				}
				if !got.Allowed {
					t.Fatalf("the gate let it through; Check refuses it: %+v", got)
				}
			case len(refusals) == before+1:
				r := refusals[before]
				if got.Allowed || got.Rule != r.Rule || got.Reason != r.Reason || got.Destination != r.Destination {
					t.Fatalf("the gate refused %s by %s: %q;\nCheck says %+v", r.Destination, r.Rule, r.Reason, got)
				}
			default:
				t.Fatalf("the gate answered %d with %d new refusals", code, len(refusals)-before)
			}

			w := row.want
			if w.rule != "" {
				if got.Allowed || got.Rule != w.rule {
					t.Errorf("got %+v; want refused by %s", got, w.rule)
				}
				return
			}
			if !got.Allowed || got.By.Setting != w.by || got.By.Rule != w.byRule || got.Address != "127.0.0.1" {
				t.Errorf("got %+v; want allowed by %s %+v at 127.0.0.1", got, w.by, w.byRule)
			}
			if w.by == ByCredential && got.By.Credential != "api" {
				t.Errorf("allowed by credential %q, want api", got.By.Credential)
			}
			if opened := got.Opened != nil && *got.Opened == loopback; opened != w.opened {
				t.Errorf("opened by %+v; want the loopback exception: %v", got.Opened, w.opened)
			}
		})
	}
	for _, g := range gates {
		assertNoSecret(t, g)
	}
}

// realAsk sends the request a tool would send for rawURL through the real
// gate: a CONNECT for https, a plain proxy request for http. It returns
// the status (200 once the test's server answered).
func realAsk(t *testing.T, g *running, rawURL string, credential bool) int {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	if u.Scheme == "http" {
		code, body := g.get(rawURL, nil)
		if code == http.StatusOK && body != "hello" {
			t.Fatalf("200 from something other than the test's server: %q", body)
		}
		return code
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	code, body := g.connect(net.JoinHostPort(u.Hostname(), port), nil)
	if credential && code == http.StatusOK && strings.Contains(body, "Client sent an HTTP request to an HTTPS server") {
		// A credential's destination: the gate let the CONNECT through and
		// ends its TLS itself, so the plain request sent in the tunnel met
		// the gate's TLS server; what it sends on is the interception's
		// tests' (intercept_test.go).
		return code
	}
	if code == http.StatusOK && body != "hello" {
		t.Fatalf("200 from something other than the test's server: %q", body)
	}
	return code
}

// A URL the gate cannot read is refused by the gate, and is bad input to
// Check, which says why.
func TestCheckRefusesABadURL(t *testing.T) {
	cfg := Config{Egress: EgressOpen}
	g := start(t, cfg)
	code, _ := g.connect("api.test:99999", nil)
	if code == http.StatusOK {
		t.Fatal("the gate tunnelled to port 99999")
	}
	g.lastRefusal("api.test:99999", RuleNotAllowed)

	for raw, msg := range map[string]string{
		"":                          "no URL to check",
		"api.github.com":            `"api.github.com" is not a URL: it has no scheme`,
		"api.github.com:443":        `"api.github.com:443" is not a URL: it has no scheme`,
		"localhost:8080":            `"localhost:8080" is not a URL: it has no scheme`,
		"//api.github.com/":         `"//api.github.com/" is not a URL: it has no scheme`,
		"ftp://api.github.com/":     `"ftp://api.github.com/": the gate carries http and https, not ftp`,
		"https://":                  `"https://" names no host`,
		"https:///x":                `"https:///x" names no host`,
		"https://api.test:99999/":   `"https://api.test:99999/": the gate cannot read its host and port: invalid port number 99999`,
		"https://api.test:0/":       `port 0 is not a port a request can reach`,
		"https://api.test:https/":   `"https://api.test:https/" is not a URL: invalid port ":https" after host`,
		"http://exa mple.com/":      `is not a URL: invalid character " " in host name`,
		"https://bad!host.test/":    `the gate cannot read its host and port: invalid domain "bad!host.test"`,
		"https://[fe80::1%25eth0]/": `the gate cannot read its host and port`,
		"https://[::1/":             `is not a URL`,
	} {
		_, err := Check(context.Background(), cfg, raw, false)
		var te *TargetError
		if !errors.As(err, &te) || !strings.Contains(te.Error(), msg) || te.Hint() == "" {
			t.Errorf("Check(%q): %v; want a TargetError with a hint saying %q", raw, err, msg)
		}
	}
}

// Without resolving, a name is answered by the rules alone, with no
// address; an address is answered in full, as with resolving.
func TestCheckWithoutResolving(t *testing.T) {
	p := 8080
	cfgs := checkConfigs(p)
	for _, row := range []struct {
		cfg, url string
		allowed  bool
		address  string
	}{
		{"list", "https://api.test/", true, ""},
		{"list", "https://other.test/", false, ""},
		{"open", "https://loop.test/", true, ""}, // the gate refuses it at its address
		{"open", "https://10.0.0.5/", false, ""},
		{"list", "http://127.0.0.1:8080/", true, "127.0.0.1"},
		{"open", "https://198.51.100.77/", false, ""},
	} {
		got, err := Check(context.Background(), cfgs[row.cfg], row.url, false)
		if err != nil {
			t.Fatalf("%s: %v", row.url, err)
		}
		if got.Allowed != row.allowed || got.Address != row.address {
			t.Errorf("%s on %s: %+v; want allowed %v at %q", row.url, row.cfg, got, row.allowed, row.address)
		}
	}
}

// An invalid configuration is an error, not an answer.
func TestCheckInvalidConfig(t *testing.T) {
	_, err := Check(context.Background(), Config{Egress: "sometimes"}, "https://api.test/", false)
	if err == nil || !strings.Contains(err.Error(), `egress "sometimes"`) {
		t.Errorf("Check with an invalid config: %v", err)
	}
}
