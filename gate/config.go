package gate

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"regexp"
	"strings"

	"github.com/stripe/smokescreen/pkg/smokescreen"
	"github.com/stripe/smokescreen/pkg/smokescreen/hostport"
	"golang.org/x/net/http/httpguts"
)

// ConfigVar is the environment variable holding the gate's Config as JSON.
const ConfigVar = "BOXES_GATE"

// The gate's two ports: the forward proxy the agent's HTTP_PROXY and
// HTTPS_PROXY name, and the credential routes (and health) it talks plain
// HTTP to.
const (
	ProxyPort = 3128
	RoutePort = 3129
)

// The values of Config.Egress.
const (
	EgressOpen = "open" // any public destination
	EgressNone = "none" // nothing but credentials and private exceptions
	EgressList = "list" // the destinations of Allow
)

// Config is what a box's gate enforces, passed as JSON in ConfigVar.
type Config struct {
	// Egress is EgressOpen, EgressNone or EgressList.
	Egress string `json:"egress"`
	// Allow lists the destinations of EgressList.
	Allow []Rule `json:"allow,omitempty"`
	// Private lists exceptions to the closed private ranges. Each is also
	// a destination allowed whatever Egress says: a host-name entry may
	// resolve to a private address, a CIDR entry opens its addresses (on
	// its port) to names and literal addresses alike.
	Private []Rule `json:"private,omitempty"`
	// Closed lists CIDRs closed whatever else says: the engine machine's
	// addresses and the bridge gateways. No Private entry opens them.
	Closed []string `json:"closed,omitempty"`
	// Credentials are headers the gate adds to what it forwards to their
	// destinations; a credential's destination is allowed by that fact.
	Credentials []Credential `json:"credentials,omitempty"`
	// Executor is the executor's side when it has a door (executor.go);
	// nil when it reaches out by itself.
	Executor *Side `json:"executor,omitempty"`

	// Hooks for tests, unexported so that they never travel in ConfigVar:
	// the names the proxy resolves, the roots the routes trust, where the
	// gate's own diagnostics go (nil: standard error), and the authority.
	resolver  smokescreen.Resolver
	rootCAs   *x509.CertPool
	logs      io.Writer
	authority *authority // nil: made by Serve
}

// Rule is one destination: a host name or a CIDR, on one port or any.
type Rule struct {
	// Host is a name, matched exactly, or "*.domain", which matches the
	// names under domain and not domain itself.
	Host string `json:"host,omitempty"`
	// CIDR is an address range ("192.168.1.0/24") or one address; it
	// matches destinations given as addresses, and a Private CIDR also
	// opens its addresses to names that resolve there.
	CIDR string `json:"cidr,omitempty"`
	// Port is the destination port; 0 is any.
	Port int `json:"port,omitempty"`
}

// Credential is a header the gate adds to requests for one destination, and
// a route of the gate that speaks TLS to it: http://gate:RoutePort/NAME/path
// is forwarded to https://HOST[:PORT]/path with Header set to Value.
type Credential struct {
	Name string `json:"name"`
	Host string `json:"host"`
	// Port is the destination's port; 0 is 443.
	Port   int    `json:"port,omitempty"`
	Header string `json:"header"`
	// Value is the header's whole value, prefix included. It never appears
	// in an error, a log line or a refusal.
	Value string `json:"value"`
	// CA is the PEM of the certificates the destination's own must chain
	// to, in place of the system's roots; "" trusts the system's. It is no
	// secret.
	CA string `json:"ca,omitempty"`
}

// ParseConfig reads a Config from its JSON and validates it. Its errors
// quote neither the JSON nor any value in it.
func ParseConfig(data []byte) (Config, error) {
	var cfg Config
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		var syntax *json.SyntaxError
		switch {
		case errors.As(err, &syntax):
			return Config{}, fmt.Errorf("the gate's configuration is not valid JSON (at byte %d)", syntax.Offset)
		case errors.Is(err, io.EOF):
			return Config{}, errors.New("the gate's configuration is empty")
		}
		// The decoder's other errors name a field or a type, never a value.
		return Config{}, fmt.Errorf("reading the gate's configuration: %w", err)
	}
	if dec.More() {
		return Config{}, errors.New("the gate's configuration holds more than one JSON value")
	}
	return cfg, cfg.Validate()
}

// Validate reports what in c the gate cannot enforce, one error per line.
func (c Config) Validate() error {
	_, err := compile(c)
	return errors.Join(err, c.validateSide())
}

// routeName is what a credential's name may be: one segment of a URL path,
// not starting with "_", which the gate's own paths (/_health) use.
var routeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// compiled is a valid Config in the form the gate matches against.
type compiled struct {
	egress      string
	allow       []rule
	private     []rule
	closed      []netip.Prefix
	credentials []credential
	side        string // "" for the agent's, SideExecutor
}

// rule is a Rule with its name normalized or its range parsed.
type rule struct {
	host     string // lower-case, Punycode, no trailing dot; "" for a range
	wildcard bool   // host is the domain of "*.domain"
	prefix   netip.Prefix
	port     int
	src      Rule // as the Config gives it
}

type credential struct {
	Credential
	host  string         // normalized as rule.host
	port  int            // Port, or 443
	roots *x509.CertPool // CA's certificates; nil for the system's roots
}

func compile(c Config) (compiled, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	out := compiled{egress: c.Egress}
	switch c.Egress {
	case EgressOpen, EgressNone:
		if len(c.Allow) > 0 {
			bad("egress %q takes no allow rules (they are for %q)", c.Egress, EgressList)
		}
	case EgressList:
	case "":
		bad("egress is not set (%q, %q or %q)", EgressOpen, EgressNone, EgressList)
	default:
		bad("egress %q is not %q, %q or %q", c.Egress, EgressOpen, EgressNone, EgressList)
	}
	for i, r := range c.Allow {
		cr, err := compileRule(r)
		if err != nil {
			bad("allow rule %d: %w", i+1, err)
		}
		out.allow = append(out.allow, cr)
	}
	for i, r := range c.Private {
		cr, err := compileRule(r)
		if err != nil {
			bad("private rule %d: %w", i+1, err)
		}
		out.private = append(out.private, cr)
	}
	for _, s := range c.Closed {
		p, err := parseRange(s)
		if err != nil {
			bad("closed %q: %w", s, err)
		}
		out.closed = append(out.closed, p)
	}
	names := map[string]bool{}
	for i, cred := range c.Credentials {
		// A credential is named by its Name or its place, never its Value.
		label := fmt.Sprintf("credential %q", cred.Name)
		if cred.Name == "" {
			label = fmt.Sprintf("credential %d", i+1)
			bad("%s has no name", label)
		} else if !routeName.MatchString(cred.Name) {
			bad("%s: a name is letters, digits, '.', '_' and '-', starting with a letter or digit", label)
		} else if names[cred.Name] {
			bad("%s is named twice", label)
		}
		names[cred.Name] = true
		host, err := normalizeName(cred.Host)
		if cred.Host == "" {
			bad("%s has no host", label)
		} else if strings.HasPrefix(cred.Host, "*.") || err != nil {
			bad("%s: host %q is not a host name or an address", label, cred.Host)
		} else if a, err := netip.ParseAddr(host); err == nil && a.Is6() {
			bad("%s: host %q is an IPv6 address, which the proxy does not take as a destination: give a name", label, cred.Host)
		}
		port := cred.Port
		if port == 0 {
			port = 443
		}
		if port < 0 || port > 65535 {
			bad("%s: port %d is not a port", label, cred.Port)
		}
		if !httpguts.ValidHeaderFieldName(cred.Header) {
			bad("%s: %q is not a header name", label, cred.Header)
		} else if connectionHeader(cred.Header) {
			bad("%s: %s is a header of the connection, not one a credential can be", label, cred.Header)
		}
		if cred.Value == "" {
			bad("%s has no value", label)
		} else if !httpguts.ValidHeaderFieldValue(cred.Value) {
			bad("%s: its value holds a character a header cannot carry (a line break or a control character)", label)
		}
		roots, err := caPool(cred.CA)
		if err != nil {
			bad("%s: ca: %w", label, err)
		}
		out.credentials = append(out.credentials, credential{Credential: cred, host: host, port: port, roots: roots})
	}
	return out, errors.Join(errs...)
}

// CheckCA reports why pem cannot be a credential's CA: it must be PEM
// certificates and nothing else.
func CheckCA(pem string) error {
	_, err := caPool(pem)
	return err
}

// caPool reads a credential's CA, PEM certificates and nothing else, as the
// roots its destination's certificate must chain to; nil for "".
func caPool(data string) (*x509.CertPool, error) {
	if data == "" {
		return nil, nil
	}
	pool := x509.NewCertPool()
	rest := []byte(data)
	n := 0
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		n++
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("holds a %s (PEM block %d): a CA is certificates alone", block.Type, n)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("holds a certificate that cannot be read (PEM block %d): %w", n, err)
		}
		pool.AddCert(c)
	}
	if n == 0 {
		return nil, errors.New("holds no PEM certificate")
	}
	return pool, nil
}

func compileRule(r Rule) (rule, error) {
	if r.Port < 0 || r.Port > 65535 {
		return rule{}, fmt.Errorf("port %d is not a port", r.Port)
	}
	switch {
	case r.Host != "" && r.CIDR != "":
		return rule{}, errors.New("a rule is a host or a cidr, not both")
	case r.CIDR != "":
		p, err := parseRange(r.CIDR)
		if err != nil {
			return rule{}, fmt.Errorf("cidr %q: %w", r.CIDR, err)
		}
		return rule{prefix: p, port: r.Port, src: r}, nil
	case r.Host != "":
		name, wildcard := strings.CutPrefix(r.Host, "*.")
		if _, err := netip.ParseAddr(name); err == nil {
			return rule{}, fmt.Errorf("host %q is an address: give it as a cidr", r.Host)
		}
		host, err := normalizeName(name)
		if err != nil || host == "" || strings.Contains(host, "*") {
			return rule{}, fmt.Errorf("host %q is not a host name or *.domain", r.Host)
		}
		return rule{host: host, wildcard: wildcard, port: r.Port, src: r}, nil
	}
	return rule{}, errors.New("a rule needs a host or a cidr")
}

// parseRange reads a CIDR or a single address as a prefix.
func parseRange(s string) (netip.Prefix, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, errors.New("not a CIDR or an address")
	}
	if p.Addr().Is4In6() {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p.Masked(), nil
}

// normalizeName is a host as the proxy compares it: smokescreen's normal
// form (lower case, Punycode) without the trailing dot of an absolute name.
func normalizeName(s string) (string, error) {
	return hostport.NormalizeHost(strings.TrimSuffix(s, "."), false)
}

// connectionHeader reports whether a header belongs to one connection or to
// the message's framing: the gate drops or sets those itself.
func connectionHeader(name string) bool {
	switch strings.ToLower(name) {
	case "connection", "proxy-connection", "keep-alive", "proxy-authenticate",
		"proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade", "host", "content-length":
		return true
	}
	return false
}
