package spec

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func TestParseDestination(t *testing.T) {
	host := func(h string, port int) Destination { return Destination{Host: h, Port: port} }
	ip := func(s string, port int) Destination {
		a := netip.MustParseAddr(s)
		return Destination{Prefix: netip.PrefixFrom(a, a.BitLen()), Port: port}
	}
	cidr := func(s string, port int) Destination { return Destination{Prefix: netip.MustParsePrefix(s), Port: port} }
	for _, tc := range []struct {
		in   string
		want Destination
		text string // canonical; in when empty
	}{
		{"api.anthropic.com", host("api.anthropic.com", 0), ""},
		{"API.Anthropic.COM", host("api.anthropic.com", 0), "api.anthropic.com"},
		{"registry.npmjs.org:8080", host("registry.npmjs.org", 8080), ""},
		{"localhost", host("localhost", 0), ""},
		{"xn--bcher-kva.example", host("xn--bcher-kva.example", 0), ""},
		{"a-b.c0.example:1", host("a-b.c0.example", 1), ""},
		{"x.com:00443", host("x.com", 443), "x.com:443"},
		{"*.github.com", host("*.github.com", 0), ""},
		{"*.GitHub.com:443", host("*.github.com", 443), "*.github.com:443"},
		{"198.51.100.7", ip("198.51.100.7", 0), ""},
		{"198.51.100.7:65535", ip("198.51.100.7", 65535), ""},
		{"10.0.0.0/8", cidr("10.0.0.0/8", 0), ""},
		{"10.0.0.0/8:5432", cidr("10.0.0.0/8", 5432), ""},
		{"10.0.0.1/32", ip("10.0.0.1", 0), "10.0.0.1"},
		{"10.0.0.1/32:22", ip("10.0.0.1", 22), "10.0.0.1:22"},
		{"0.0.0.0/0", cidr("0.0.0.0/0", 0), ""},
		{"2001:db8::1", ip("2001:db8::1", 0), ""},
		{"2001:DB8:0:0::1", ip("2001:db8::1", 0), "2001:db8::1"},
		{"[2001:db8::1]:443", ip("2001:db8::1", 443), ""},
		{"[::1]:443", ip("::1", 443), ""},
		{"fd00::/8", cidr("fd00::/8", 0), ""},
		{"fd00::/8:5432", cidr("fd00::/8", 5432), ""},
		{"2001:db8::1/128:443", ip("2001:db8::1", 443), "[2001:db8::1]:443"},
	} {
		d, err := ParseDestination(tc.in)
		if err != nil {
			t.Errorf("ParseDestination(%q): %v", tc.in, err)
			continue
		}
		text := tc.text
		if text == "" {
			text = tc.in
		}
		if d != tc.want || d.String() != text {
			t.Errorf("ParseDestination(%q) = %#v (%s), want %#v (%s)", tc.in, d, d, tc.want, text)
		}
		back, err := ParseDestination(d.String())
		if err != nil || back != d {
			t.Errorf("%q does not read back: %#v, %v", d.String(), back, err)
		}
		if d.Wildcard() != strings.HasPrefix(tc.in, "*.") {
			t.Errorf("%q: Wildcard() = %v", tc.in, d.Wildcard())
		}
	}
}

func TestParseDestinationErrors(t *testing.T) {
	for _, tc := range []struct{ in, msg, hint string }{
		{"", "a destination cannot be empty", "a host name"},
		{"https://api.x.com", `"https://api.x.com": a destination is a host name, not a URL`, "write the host alone: api.x.com"},
		{"https://api.x.com:8443/v1", "not a URL", "write the host alone: api.x.com:8443"},
		{"api.x.com/v1", `"api.x.com/v1" has a path: a destination is a host name, not a URL`, ""},
		{"*", "* goes only in a leading *. label", `"*.github.com" matches api.github.com but not github.com`},
		{"api.*.com", "* goes only in a leading *. label", ""},
		{"*github.com", "* goes only in a leading *. label", ""},
		{"*.*.github.com", "* goes only in a leading *. label", ""},
		{"*.", `"*." names no host`, ""},
		{":443", `":443" names no host`, ""},
		{"a..b", "has an empty label", ""},
		{".a.com", "has an empty label", ""},
		{"a.com.", "has an empty label", ""},
		{"a_b.com", `'_' is not allowed in a host name`, ""},
		{"a b.com", `' ' is not allowed in a host name`, ""},
		{"bücher.de", "has a character outside ASCII", "xn--"},
		{"-a.com", "cannot start or end with '-'", ""},
		{"a-.com", "cannot start or end with '-'", ""},
		{strings.Repeat("a", 64) + ".com", "has a label of 64 characters; DNS allows 63", ""},
		{strings.Repeat("abcdefghi.", 26) + "com", "a host name is at most 253 characters", ""},
		{"1.2.3", `"1.2.3" is neither an IP address nor a host name`, "four numbers"},
		{"1.2.3.256", "is neither an IP address nor a host name", ""},
		{"x.com:", `"x.com:" has a ':' but no port`, "1 to 65535"},
		{"x.com:https", `port "https" is not a number`, "1 to 65535"},
		{"x.com:+443", `port "+443" is not a number`, ""},
		{"x.com:0", "port 0 is out of range", "1 to 65535"},
		{"x.com:65536", "port 65536 is out of range", ""},
		{"x.com:99999999999999999999", "is out of range", ""},
		{"192.0.2.1:70000", "port 70000 is out of range", ""},
		{"10.0.0.0/8:70000", "port 70000 is out of range", ""},
		{"10.0.0.0/8:", "has a ':' but no port", ""},
		{"10.0.0.1/8", `"10.0.0.1/8" has address bits set beyond its /8`, "the range is 10.0.0.0/8"},
		{"fd00::1/8", "has address bits set beyond its /8", "the range is fd00::/8"},
		{"10.0.0.0/33", "the prefix length /33 is not a number from 0 to 32", ""},
		{"fd00::/129", "the prefix length /129 is not a number from 0 to 128", ""},
		{"10.0.0.0/", "the prefix length / is not a number", ""},
		{"10.0.0.0/+8", "the prefix length /+8 is not a number", ""},
		{"300.0.0.0/8", `"300.0.0.0/8" is not a CIDR range: "300.0.0.0" is not an IP address`, ""},
		{"2001:db8::g:443", `"2001:db8::g:443" is not an IPv6 address`, "[2001:db8::1]:443"},
		{"[2001:db8::1]", "has brackets but no port", ""},
		{"[2001:db8::1", "opens a [ it does not close", ""},
		{"[192.0.2.1]:443", "only an IPv6 address goes in brackets", ""},
		{"[fd00::/8]:443", "only an IPv6 address goes in brackets", "fd00::/8:443"},
		{"[2001:db8::1]443", "only :PORT may follow the ]", ""},
		{"[2001:db8::1]:0", "port 0 is out of range", ""},
		{"fe80::1%eth0", "has a zone", "without its %zone"},
		{"[fe80::1%eth0]:443", "has a zone", ""},
		{"::ffff:192.0.2.1", "is an IPv4 address written as IPv6", "write it as 192.0.2.1"},
		{"::ffff:10.0.0.0/104", "is an IPv4 address written as IPv6", ""},
	} {
		_, err := ParseDestination(tc.in)
		var de *destinationError
		if !errors.As(err, &de) {
			t.Errorf("ParseDestination(%q) = %v, want a destinationError", tc.in, err)
			continue
		}
		if !strings.Contains(de.msg, tc.msg) || !strings.Contains(de.hint, tc.hint) {
			t.Errorf("ParseDestination(%q): %q hint %q; want %q hint %q", tc.in, de.msg, de.hint, tc.msg, tc.hint)
		}
	}
}

func TestEgressString(t *testing.T) {
	one := []Destination{{Host: "x.com"}}
	for _, tc := range []struct {
		e    Egress
		want string
	}{
		{Egress{}, "open"},
		{Egress{Mode: EgressNone}, "none"},
		{Egress{Mode: EgressList, Allow: one}, "1 destination"},
		{Egress{Mode: EgressList, Allow: append(one, Destination{Host: "y.com"}, Destination{Host: "z.com"})}, "3 destinations"},
	} {
		if got := tc.e.String(); got != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.e, got, tc.want)
		}
	}
}

// networkExample is the design's example, with defaults and every form.
const networkExample = `version: 1
defaults:
  egress: [api.anthropic.com, "*.github.com", registry.npmjs.org, "198.51.100.7:8080"]
  private: ["192.168.1.10:5432"]
  dns: [192.0.2.53]
  credentials:
    anthropic: {to: api.anthropic.com, header: x-api-key, from: "env:ANTHROPIC_API_KEY"}
    github:
      to: api.github.com
      header: Authorization
      prefix: "Bearer "
      from: file:~/.config/gh/token
boxes:
  inherits: {}
  closed:
    egress: none
    private: []
    dns: ["2001:db8::53", 192.0.2.54]
  open:
    egress: open
    private: [10.20.0.0/16, "[fd00::5]:8443", db.lan]
    credentials:
      github: {to: "api.github.com:443", header: authorization, from: env:GH_TOKEN}
      npm: {to: registry.npmjs.org, header: Authorization, prefix: "Bearer ", from: file:secrets/npm}
      other-port: {to: "api.github.com:8443", header: Authorization, from: "env:GH_TOKEN", ca: "file:~/.config/corp/ca.pem"}
      by-address: {to: 192.0.2.7/32, header: x-token, from: "env:T"}
`

// The design's example, with defaults: egress:, private: and dns: set on a
// box replace the defaults' whole; credentials: merge by name, the box's
// own winning whole.
func TestParseNetwork(t *testing.T) {
	cfg, err := Parse("boxes.yaml", []byte(networkExample))
	if err != nil {
		t.Fatal(err)
	}
	text := func(ds []Destination) string {
		out := make([]string, len(ds))
		for i, d := range ds {
			out[i] = d.String()
		}
		return strings.Join(out, " ")
	}
	creds := func(cs []Credential) string {
		out := make([]string, len(cs))
		for i, c := range cs {
			out[i] = c.Name + "=" + c.To.String() + "|" + c.Header + "|" + c.Prefix + "|" + c.From
			if c.CA != "" {
				out[i] += "|" + c.CA
			}
		}
		return strings.Join(out, " ")
	}
	anthropic := "anthropic=api.anthropic.com|x-api-key||env:ANTHROPIC_API_KEY"
	github := "github=api.github.com|Authorization|Bearer |file:~/.config/gh/token"
	if d := cfg.Defaults; d.Egress.Mode != EgressList || d.Egress.String() != "4 destinations" ||
		text(d.Egress.Allow) != "api.anthropic.com *.github.com registry.npmjs.org 198.51.100.7:8080" ||
		text(d.Private) != "192.168.1.10:5432" || creds(d.Credentials) != anthropic+" "+github ||
		!reflect.DeepEqual(d.DNS, []netip.Addr{netip.MustParseAddr("192.0.2.53")}) {
		t.Errorf("defaults: egress %v %s, private %s, credentials %s, dns %v", d.Egress, text(d.Egress.Allow), text(d.Private), creds(d.Credentials), d.DNS)
	}
	closed, inherits, open := cfg.Boxes[0], cfg.Boxes[1], cfg.Boxes[2]
	if b := inherits; !reflect.DeepEqual(b.Egress, cfg.Defaults.Egress) || text(b.Private) != "192.168.1.10:5432" ||
		creds(b.Credentials) != anthropic+" "+github || len(b.DNS) != 1 {
		t.Errorf("inherits: egress %v, private %s, credentials %s, dns %v", b.Egress, text(b.Private), creds(b.Credentials), b.DNS)
	}
	if b := closed; b.Egress.Mode != EgressNone || b.Egress.Allow != nil || len(b.Private) != 0 ||
		creds(b.Credentials) != anthropic+" "+github ||
		!reflect.DeepEqual(b.DNS, []netip.Addr{netip.MustParseAddr("2001:db8::53"), netip.MustParseAddr("192.0.2.54")}) {
		t.Errorf("closed: egress %v, private %s, credentials %s, dns %v", b.Egress, text(b.Private), creds(b.Credentials), b.DNS)
	}
	wantOpen := anthropic + " by-address=192.0.2.7|x-token||env:T github=api.github.com:443|authorization||env:GH_TOKEN" +
		" npm=registry.npmjs.org|Authorization|Bearer |file:secrets/npm other-port=api.github.com:8443|Authorization||env:GH_TOKEN|file:~/.config/corp/ca.pem"
	if b := open; b.Egress.Mode != EgressOpen || b.Egress.String() != "open" || text(b.Private) != "10.20.0.0/16 [fd00::5]:8443 db.lan" ||
		creds(b.Credentials) != wantOpen || len(b.DNS) != 1 {
		t.Errorf("open: egress %v, private %s, credentials %s, dns %v", b.Egress, text(b.Private), creds(b.Credentials), b.DNS)
	}
	// Each box owns its lists.
	inherits.Private[0] = Destination{Host: "changed"}
	inherits.Credentials[0].Name = "changed"
	if cfg.Defaults.Private[0].Host != "" || cfg.Boxes[0].Credentials[0].Name != "anthropic" {
		t.Error("a box's lists are shared with the defaults or another box")
	}
}

func TestParseNetworkUnset(t *testing.T) {
	cfg, err := Parse("boxes.yaml", []byte("version: 1\nboxes:\n  a: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	b := cfg.Boxes[0]
	if b.Egress.Mode != EgressOpen || b.Egress.Allow != nil || b.Private != nil || b.Credentials != nil || b.DNS != nil {
		t.Errorf("a box with no network keys: %+v %+v %+v %+v", b.Egress, b.Private, b.Credentials, b.DNS)
	}
}

func TestParseNetworkErrors(t *testing.T) {
	box := func(lines ...string) string {
		return "version: 1\nboxes:\n  a:\n" + strings.Join(lines, "\n") + "\n"
	}
	cred := func(line string) string { return box("    credentials:", line) }
	cases := []struct {
		name, src string
		line, col int
		msg, hint string
	}{
		// egress:
		{"egress URL", box(`    egress: [api.x.com, "https://x"]`), 4, 25, `egress: "https://x": a destination is a host name, not a URL`, "write the host alone: x"},
		{"egress URL with a port", box(`    egress: ["https://api.x.com:8443/v1"]`), 4, 14, "not a URL", "api.x.com:8443"},
		{"egress path", box(`    egress: [api.x.com/v1]`), 4, 14, `egress: "api.x.com/v1" has a path: a destination is a host name, not a URL`, "write the host alone: api.x.com"},
		{"egress empty", box(`    egress: []`), 4, 13, "egress: [] lists no destination", "write egress: none"},
		{"egress word", box(`    egress: closed`), 4, 13, `egress is open, none or a list of destinations, not "closed"`, "egress: open"},
		{"egress one destination", box(`    egress: api.x.com`), 4, 13, `not "api.x.com"`, "one destination is a list of one: egress: [api.x.com]"},
		{"egress one wildcard", box(`    egress: "*.x.com"`), 4, 13, `not "*.x.com"`, `egress: ["*.x.com"]`},
		{"egress mapping", box(`    egress: {open: true}`), 4, 13, "egress is open, none or a list of destinations, found a mapping", ""},
		{"egress nothing", box(`    egress:`, `    cpus: 1`), 4, 12, "egress is open, none or a list of destinations, found nothing", ""},
		{"egress unquoted wildcard", box(`    egress: [api.x.com, *.github.com]`), 4, 25, "YAML syntax error", `quote a wildcard destination: "*.github.com"`},
		{"egress unquoted wildcard in a block", box(`    egress:`, `      - *.github.com`), 5, 9, "YAML syntax error", `"*.github.com"`},
		{"egress wildcard inside", box(`    egress: ["api.*.com"]`), 4, 14, `egress: "api.*.com": * goes only in a leading *. label`, "but not github.com"},
		{"egress star", box(`    egress: ["*"]`), 4, 14, "* goes only in a leading *. label", ""},
		{"egress wildcard without dot", box(`    egress: ["*github.com"]`), 4, 14, "* goes only in a leading *. label", ""},
		{"egress empty label", box(`    egress: [a..b]`), 4, 14, `egress: "a..b" has an empty label`, ""},
		{"egress bad character", box(`    egress: [a_b.com]`), 4, 14, `'_' is not allowed in a host name`, ""},
		{"egress non-ASCII", box(`    egress: [bücher.de]`), 4, 14, "has a character outside ASCII", "xn--"},
		{"egress number", box(`    egress: [1.2.3.256]`), 4, 14, `egress: "1.2.3.256" is neither an IP address nor a host name`, ""},
		{"egress number entry", box(`    egress: [8080]`), 4, 14, `"8080" is neither an IP address nor a host name`, ""},
		{"egress port word", box(`    egress: ["x.com:https"]`), 4, 14, `egress: "x.com:https": port "https" is not a number`, "1 to 65535"},
		{"egress port range", box(`    egress: ["x.com:65536"]`), 4, 14, "port 65536 is out of range", "1 to 65535"},
		{"egress port zero", box(`    egress: ["x.com:0"]`), 4, 14, "port 0 is out of range", ""},
		{"egress no port", box(`    egress: ["x.com:"]`), 4, 14, "has a ':' but no port", ""},
		{"egress range port", box(`    egress: ["10.0.0.0/8:70000"]`), 4, 14, "port 70000 is out of range", ""},
		{"egress host bits", box(`    egress: [10.0.0.1/8]`), 4, 14, `"10.0.0.1/8" has address bits set beyond its /8`, "the range is 10.0.0.0/8"},
		{"egress prefix length", box(`    egress: [10.0.0.0/33]`), 4, 14, "the prefix length /33 is not a number from 0 to 32", ""},
		{"egress IPv6 port", box(`    egress: ["2001:db8::g:443"]`), 4, 14, "is not an IPv6 address", "[2001:db8::1]:443"},
		{"egress brackets", box(`    egress: ["[2001:db8::1]"]`), 4, 14, "has brackets but no port", ""},
		{"egress IPv4 in brackets", box(`    egress: ["[192.0.2.1]:443"]`), 4, 14, "only an IPv6 address goes in brackets", ""},
		{"egress zone", box(`    egress: ["fe80::1%eth0"]`), 4, 14, "has a zone", ""},
		{"egress IPv4 as IPv6", box(`    egress: ["::ffff:192.0.2.1"]`), 4, 14, "is an IPv4 address written as IPv6", "write it as 192.0.2.1"},
		{"egress duplicate", box(`    egress:`, `      - api.x.com`, `      - 10.0.0.0/8`, `      - api.x.com`), 7, 9, `egress: duplicate destination "api.x.com" (first at line 5)`, "remove one of them"},
		{"egress duplicate in another case", box(`    egress:`, `      - api.x.com`, `      - API.x.com`), 6, 9, `egress: "API.x.com" is the same destination as "api.x.com" (line 5)`, "remove one"},
		{"egress duplicate /32", box(`    egress: [192.0.2.1, 192.0.2.1/32]`), 4, 25, `"192.0.2.1/32" is the same destination as "192.0.2.1" (line 4)`, ""},
		{"egress duplicate IPv6", box(`    egress: ["2001:db8::1", "[2001:db8:0::1]:443", "2001:DB8::1"]`), 4, 52, `"2001:DB8::1" is the same destination as "2001:db8::1" (line 4)`, ""},
		{"egress entry mapping", box(`    egress: [{host: x}]`), 4, 14, "egress: expected a destination, found a mapping", ""},
		{"egress entry nothing", box(`    egress:`, `      - api.x.com`, `      -`, `    cpus: 1`), 6, 8, "egress: expected a destination, found nothing", ""},
		{"egress in defaults", "version: 1\ndefaults:\n  egress: [\"https://x\"]\nboxes:\n  a: {}\n", 3, 12, "egress: \"https://x\": a destination is a host name, not a URL", ""},
		// private:
		{"private URL", box(`    private: ["https://db.lan"]`), 4, 15, `private: "https://db.lan": a destination is a host name, not a URL`, "db.lan"},
		{"private one", box(`    private: 192.168.1.10`), 4, 14, `private is a list of destinations, not "192.168.1.10"`, "private: [192.168.1.10]"},
		{"private none", box(`    private: none`), 4, 14, `private is a list of destinations, not "none"`, "a host name"},
		{"private nothing", box(`    private:`, `    cpus: 1`), 4, 13, "private is a list of destinations, found nothing", ""},
		{"private duplicate", box(`    private: [10.0.0.0/8, 10.0.0.0/8]`), 4, 27, `private: duplicate destination "10.0.0.0/8" (first at line 4)`, ""},
		{"private port", box(`    private: ["192.168.1.10:99999"]`), 4, 15, "private: \"192.168.1.10:99999\": port 99999 is out of range", ""},
		{"private wildcard inside", box(`    private: ["db.*.lan"]`), 4, 15, "* goes only in a leading *. label", ""},
		// dns:
		{"dns name", box(`    dns: [dns.google]`), 4, 11, `dns: "dns.google" is not an IP address`, "by IP address"},
		{"dns port", box(`    dns: ["192.0.2.53:53"]`), 4, 11, `dns: "192.0.2.53:53" is not an IP address`, ""},
		{"dns duplicate", box(`    dns: [192.0.2.53, 192.0.2.53]`), 4, 23, "dns: duplicate name server 192.0.2.53 (first at line 4)", "remove one"},
		{"dns duplicate IPv6", box(`    dns: ["2001:db8::53", "2001:DB8:0::53"]`), 4, 27, "dns: duplicate name server 2001:DB8:0::53 (first at line 4)", ""},
		{"dns scalar", box(`    dns: 192.0.2.53`), 4, 10, `dns is a list of IP addresses, found "192.0.2.53"`, ""},
		{"dns zone", box(`    dns: ["fe80::1%eth0"]`), 4, 11, "has a zone", ""},
		{"dns IPv4 as IPv6", box(`    dns: ["::ffff:192.0.2.53"]`), 4, 11, "is an IPv4 address written as IPv6", "192.0.2.53"},
		{"dns entry list", box(`    dns: [[1]]`), 4, 11, "dns: expected an IP address, found a list", ""},
		// credentials:
		{"credentials list", box(`    credentials: [x]`), 4, 18, "expected a mapping of credential names, found a list", ""},
		{"credential not a mapping", cred(`      x: api.x.com`), 5, 10, `expected a mapping with to:, header: and from:, found "api.x.com"`, ""},
		{"credential name", cred(`      Anthropic: {to: api.x.com, header: x-api-key, from: "env:X"}`), 5, 7, `bad credential name "Anthropic"`, "lower-case letters, digits and '-'"},
		{"credential name underscore", cred(`      my_key: {to: api.x.com, header: x-api-key, from: "env:X"}`), 5, 7, `bad credential name "my_key"`, ""},
		{"credential name digit", cred(`      1key: {to: api.x.com, header: x-api-key, from: "env:X"}`), 5, 7, `bad credential name "1key"`, ""},
		{"credential value", cred(`      x: {to: api.x.com, header: x-api-key, from: "env:X", value: sk-secret}`), 5, 60, "credential x: secrets never go in boxes.yaml, so a credential has no value:", "from: env:NAME, from: file:PATH or from: cmd:COMMAND"},
		{"credential missing", cred(`      x: {to: api.x.com}`), 5, 7, "credential x is missing header:, from:", "e.g. anthropic:"},
		{"credential unknown key", cred(`      x: {to: api.x.com, header: x-api-key, from: "env:X", hedaer: y}`), 5, 60, `unknown key "hedaer"`, `did you mean "header"?`},
		{"credential to wildcard", cred(`      x: {to: "*.x.com", header: x-api-key, from: "env:X"}`), 5, 15, `credential x: to: "*.x.com" is a wildcard; a credential goes to one host`, "api.github.com"},
		{"credential to range", cred(`      x: {to: 10.0.0.0/8, header: x-api-key, from: "env:X"}`), 5, 15, `credential x: to: "10.0.0.0/8" is a range; a credential goes to one address`, ""},
		{"credential to URL", cred(`      x: {to: "https://api.x.com", header: x-api-key, from: "env:X"}`), 5, 15, `credential x: to: "https://api.x.com": a destination is a host name, not a URL`, "api.x.com"},
		{"credential to port", cred(`      x: {to: "api.x.com:0", header: x-api-key, from: "env:X"}`), 5, 15, "port 0 is out of range", ""},
		{"credential header", cred(`      x: {to: api.x.com, header: "x api key", from: "env:X"}`), 5, 34, `credential x: header: "x api key" is not an HTTP header name`, "x-api-key"},
		{"credential header Host", cred(`      x: {to: api.x.com, header: Host, from: "env:X"}`), 5, 34, "credential x cannot set Host: the gate sets it for each request", "Authorization"},
		{"credential header content-length", cred(`      x: {to: api.x.com, header: content-length, from: "env:X"}`), 5, 34, "cannot set content-length", ""},
		{"credential header Transfer-Encoding", cred(`      x: {to: api.x.com, header: Transfer-Encoding, from: "env:X"}`), 5, 34, "cannot set Transfer-Encoding", ""},
		{"credential header CONNECTION", cred(`      x: {to: api.x.com, header: CONNECTION, from: "env:X"}`), 5, 34, "cannot set CONNECTION", ""},
		{"credential from a secret", cred(`      x: {to: api.x.com, header: x-api-key, from: sk-ant-api03-secret}`), 5, 51, "credential x: from: is env:NAME, file:PATH or cmd:COMMAND; the value itself never goes in boxes.yaml", "on the machine running boxes"},
		{"credential from env name", cred(`      x: {to: api.x.com, header: x-api-key, from: "env:1X"}`), 5, 51, "credential x: from: env: needs an environment variable name", "letters, digits and _"},
		{"credential from env empty", cred(`      x: {to: api.x.com, header: x-api-key, from: "env:"}`), 5, 51, "from: env: needs an environment variable name", ""},
		{"credential from file empty", cred(`      x: {to: api.x.com, header: x-api-key, from: "file:"}`), 5, 51, "credential x: from: file: needs a path", ""},
		{"credential from another home", cred(`      x: {to: api.x.com, header: x-api-key, from: "file:~bob/key"}`), 5, 51, "from: file: takes ~/ only, not ~user", "~/PATH"},
		{"credential ca env", cred(`      x: {to: api.x.com, header: x-api-key, from: "env:X", ca: "env:CA"}`), 5, 64, `credential x: ca: is file:PATH, not "env:CA"`, "a PEM file"},
		{"credential ca path", cred(`      x: {to: api.x.com, header: x-api-key, from: "env:X", ca: /etc/ca.pem}`), 5, 64, `credential x: ca: is file:PATH, not "/etc/ca.pem"`, "ca: file:~/"},
		{"credential ca empty", cred(`      x: {to: api.x.com, header: x-api-key, from: "env:X", ca: "file:"}`), 5, 64, "credential x: ca: file: needs a path", ""},
		{"credential ca another home", cred(`      x: {to: api.x.com, header: x-api-key, from: "env:X", ca: "file:~bob/ca.pem"}`), 5, 64, "credential x: ca: file: takes ~/ only, not ~user", "~/PATH"},
		{"credential ca list", cred(`      x: {to: api.x.com, header: x-api-key, from: "env:X", ca: [file:a]}`), 5, 64, "found a list", ""},
		{"credential prefix", box(`    credentials:`, `      x:`, `        to: api.x.com`, `        header: Authorization`, `        prefix: "Bearer\n"`, `        from: env:X`), 8, 17, "credential x: prefix holds a control character, which a header cannot carry", ""},
		{"credential clash", box(`    credentials:`, `      a: {to: api.x.com, header: X-Api-Key, from: "env:A"}`, `      b: {to: "api.x.com:443", header: x-api-key, from: "env:B"}`), 6, 7,
			"credential b sets header x-api-key on api.x.com:443, as credential a (line 5) does", "one value per header and destination"},
		{"credential clash with defaults", "version: 1\ndefaults:\n  credentials:\n    a: {to: api.x.com, header: x-api-key, from: \"env:A\"}\nboxes:\n  b:\n    credentials:\n      z: {to: api.x.com, header: X-API-KEY, from: \"env:Z\"}\n", 8, 7,
			"credential z sets header X-API-KEY on api.x.com, as credential a (line 4) does", ""},
		{"credential in defaults", "version: 1\ndefaults:\n  credentials:\n    x: {to: api.x.com, header: Host, from: \"env:X\"}\nboxes:\n  a: {}\n", 4, 32, "credential x cannot set Host", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := firstError(t, tc.src, tc.line, tc.col, tc.msg, tc.hint)
			// A secret written where boxes.yaml takes none stays out of messages.
			if text := errs.Error() + strings.Join(errs.HintLines(), ""); strings.Contains(text, "sk-") {
				t.Errorf("a message quotes the secret: %s", text)
			}
		})
	}
}

// A clash between two credentials of defaults: is reported once, at the
// defaults, not again in each box that adds credentials of its own.
func TestCredentialClashReportedOnce(t *testing.T) {
	src := `version: 1
defaults:
  credentials:
    a: {to: api.x.com, header: x-api-key, from: "env:A"}
    b: {to: api.x.com, header: x-api-key, from: "env:B"}
boxes:
  c: {credentials: {c: {to: api.y.com, header: x-api-key, from: "env:C"}}}
  d: {credentials: {d: {to: api.z.com, header: x-api-key, from: "env:D"}}}
`
	_, err := Parse("boxes.yaml", []byte(src))
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 1 || errs[0].Error() != "boxes.yaml:5:5: credential b sets header x-api-key on api.x.com, as credential a (line 4) does" {
		t.Errorf("errors = %v", err)
	}
}

// A destination of egress: wholly in a range the gate closes whatever
// egress: says is refused where it is written, naming the range and
// private:, which opens it; a wider range keeps its public addresses and
// passes, as does one private: opens on its port.
func TestClosedEgress(t *testing.T) {
	box := func(lines ...string) string {
		return "version: 1\nboxes:\n  a:\n" + strings.Join(lines, "\n") + "\n"
	}
	const opens = `list it under private: (private: [`
	for _, tc := range []struct {
		name, src string
		line, col int // 0: accepted
		msg, hint string
	}{
		{"private address", box(`    egress: [api.x.com, 10.0.0.1]`), 4, 25, `egress: "10.0.0.1" is in 10.0.0.0/8, a private range the gate closes whatever egress: says`, opens + `"10.0.0.1"])`},
		{"private range with a port", box(`    egress: ["192.168.1.0/24:5432"]`), 4, 14, `"192.168.1.0/24:5432" is in 192.168.0.0/16, a private range`, `private: ["192.168.1.0/24:5432"]`},
		{"bridge gateway", box(`    egress: [172.17.0.1]`), 4, 14, "172.16.0.0/12, a private range", opens},
		{"loopback", box(`    egress: ["127.0.0.1:8080"]`), 4, 14, "127.0.0.0/8, the loopback range", opens},
		{"metadata", box(`    egress: [169.254.169.254]`), 4, 14, "169.254.0.0/16, the link-local range (cloud metadata)", opens},
		{"carrier-grade NAT", box(`    egress: [100.100.1.1]`), 4, 14, "100.64.0.0/10, the carrier-grade NAT range", opens},
		{"reserved", box(`    egress: [198.18.0.1]`), 4, 14, "198.18.0.0/15, a reserved range", opens},
		{"two ranges", box(`    egress: [224.0.0.0/3]`), 4, 14, "224.0.0.0/4 (the multicast range) and 240.0.0.0/4 (a reserved range), which the gate closes", opens},
		{"IPv6 unique-local", box(`    egress: ["[fd00::1]:443"]`), 4, 14, `"[fd00::1]:443" is in fc00::/7, the unique-local range`, "the gate takes IPv6 destinations by name only"},
		{"IPv6 loopback", box(`    egress: ["::1"]`), 4, 14, "::1/128, the loopback address", "by name only"},
		{"IPv6 link-local", box(`    egress: ["fe80::/64"]`), 4, 14, "fe80::/10, the link-local range", ""},
		{"IPv6 unique-local opened for IPv4 only", box(`    egress: ["fd00::1"]`, `    private: ["fd00::/8"]`), 4, 14, "fc00::/7", "by name only"},
		{"opened on another port", box(`    egress: ["10.0.0.1:22"]`, `    private: ["10.0.0.0/8:5432"]`), 4, 14, `"10.0.0.1:22" is in 10.0.0.0/8`, `private: ["10.0.0.1:22"]`},
		{"opened for part of it", box(`    egress: [10.0.0.0/16]`, `    private: [10.0.0.0/24]`), 4, 14, `"10.0.0.0/16" is in 10.0.0.0/8`, ""},
		{"a name under private opens no address", box(`    egress: [10.0.0.5]`, `    private: [db.lan]`), 4, 14, `"10.0.0.5" is in 10.0.0.0/8`, ""},
		{"in the defaults", "version: 1\ndefaults:\n  egress: [10.1.2.3]\nboxes:\n  a: {}\n", 3, 12, `egress: "10.1.2.3" is in 10.0.0.0/8`, opens},
		{"inherited, private of the box's own", "version: 1\ndefaults:\n  egress: [10.1.2.3]\n  private: [10.0.0.0/8]\nboxes:\n  a:\n    private: [db.lan]\n", 7, 14,
			`egress: "10.1.2.3", from the defaults, is in 10.0.0.0/8, a private range the gate closes whatever egress: says, and box a's private: does not open it`, opens},
		{"in a pool", "version: 1\nboxes: {}\npools:\n  p:\n    size: 1\n    egress: [api.x.com, \"10.9.0.0/16:443\"]\n", 6, 25, `egress: "10.9.0.0/16:443" is in 10.0.0.0/8`, opens},
		{"pool inherits, private of its own", "version: 1\ndefaults: {egress: [10.1.2.3], private: [10.1.2.3]}\nboxes: {}\npools:\n  p:\n    size: 1\n    private: [db.lan]\n", 7, 14, "and pool p's private: does not open it", ""},
		// Accepted.
		{"opened by private", box(`    egress: [10.0.0.1, api.x.com]`, `    private: ["10.0.0.0/8"]`), 0, 0, "", ""},
		{"opened on its port", box(`    egress: ["10.0.0.1:5432"]`, `    private: ["10.0.0.1:5432"]`), 0, 0, "", ""},
		{"opened by the defaults' private", "version: 1\ndefaults: {private: [10.0.0.0/8]}\nboxes:\n  a: {egress: [10.1.2.3]}\n", 0, 0, "", ""},
		{"the box opens what the defaults list", "version: 1\ndefaults: {egress: [10.1.2.3], private: [10.1.2.3]}\nboxes:\n  a: {private: [10.0.0.0/8]}\n", 0, 0, "", ""},
		{"a wider range", box(`    egress: [0.0.0.0/0, 10.0.0.0/7, "::/0"]`), 0, 0, "", ""},
		{"public addresses", box(`    egress: [198.51.100.7, "2001:db8::1", 8.8.8.8/32]`), 0, 0, "", ""},
		{"a name", box(`    egress: [localhost, metadata.google.internal]`), 0, 0, "", ""},
		{"open and none", "version: 1\ndefaults: {egress: open}\nboxes:\n  a: {egress: none, private: [db.lan]}\n", 0, 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.line == 0 {
				if _, err := Parse("boxes.yaml", []byte(tc.src)); err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			errs := firstError(t, tc.src, tc.line, tc.col, tc.msg, tc.hint)
			if len(errs) != 1 {
				t.Errorf("%d errors, want one: %v", len(errs), errs)
			}
		})
	}
}
