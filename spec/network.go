package spec

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hermes-box/boxes/gate"
)

const (
	destinationForms = `a destination is a host name (api.github.com), a wildcard ("*.github.com"), an IP address or a CIDR range (10.0.0.0/8), each with an optional :port`
	portHint         = "a port is a number from 1 to 65535"
	wildcardHint     = `a wildcard is one leading "*." label: "*.github.com" matches api.github.com but not github.com`
)

// destinationError is why a destination does not read, with what to do.
type destinationError struct{ msg, hint string }

func (e *destinationError) Error() string { return e.msg }

func badDestination(hint, format string, args ...any) (Destination, error) {
	return Destination{}, &destinationError{msg: fmt.Sprintf(format, args...), hint: hint}
}

// ParseDestination reads a destination as boxes.yaml writes it: a host name
// (api.github.com), a wildcard (*.github.com), an IP address or a CIDR
// range, each with an optional port: api.github.com:443, 192.0.2.7:8080,
// [2001:db8::1]:443, 10.0.0.0/8:5432. Host names are made lower-case.
func ParseDestination(s string) (Destination, error) {
	if s == "" {
		return badDestination(destinationForms, "a destination cannot be empty")
	}
	if strings.Contains(s, "://") {
		hint := "write the host alone, with :PORT to allow one port only"
		if u, err := url.Parse(s); err == nil && u.Host != "" {
			hint = fmt.Sprintf("write the host alone: %s", u.Host)
		}
		return badDestination(hint, "%q: a destination is a host name, not a URL", s)
	}
	if strings.HasPrefix(s, "[") {
		return bracketed(s)
	}
	if a, err := netip.ParseAddr(s); err == nil {
		if err := checkAddr(s, a); err != nil {
			return Destination{}, err
		}
		return Destination{Prefix: netip.PrefixFrom(a, a.BitLen())}, nil
	}
	if addr, rest, ok := strings.Cut(s, "/"); ok {
		return cidr(s, addr, rest)
	}
	host, portText, hasPort := s, "", false
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		host, portText, hasPort = s[:i], s[i+1:], true
	}
	if strings.Contains(host, ":") {
		return badDestination("an IPv6 address with a port is written [2001:db8::1]:443", "%q is not an IPv6 address", s)
	}
	var d Destination
	if a, err := netip.ParseAddr(host); err == nil {
		d.Prefix = netip.PrefixFrom(a, a.BitLen())
	} else if d.Host, err = hostName(s, host); err != nil {
		return Destination{}, err
	}
	if hasPort {
		port, err := parsePort(s, portText)
		if err != nil {
			return Destination{}, err
		}
		d.Port = port
	}
	return d, nil
}

// bracketed reads an IPv6 address with a port, [2001:db8::1]:443.
func bracketed(s string) (Destination, error) {
	const hint = "an IPv6 address is written 2001:db8::1 alone, [2001:db8::1]:443 with a port"
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return badDestination(hint, "%q opens a [ it does not close", s)
	}
	a, err := netip.ParseAddr(s[1:end])
	if err != nil || !a.Is6() {
		return badDestination(hint+", and a range with a port fd00::/8:443", "%q: only an IPv6 address goes in brackets", s)
	}
	if err := checkAddr(s, a); err != nil {
		return Destination{}, err
	}
	rest := s[end+1:]
	if rest == "" {
		return badDestination(hint, "%q has brackets but no port", s)
	}
	if rest[0] != ':' {
		return badDestination(hint, "%q: only :PORT may follow the ]", s)
	}
	port, err := parsePort(s, rest[1:])
	if err != nil {
		return Destination{}, err
	}
	return Destination{Prefix: netip.PrefixFrom(a, a.BitLen()), Port: port}, nil
}

// cidr reads the range s, written addr/rest where rest is the prefix
// length with an optional :PORT.
func cidr(s, addr, rest string) (Destination, error) {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		if _, err := hostName(s, addr); err == nil {
			return badDestination("write the host alone: "+addr, "%q has a path: a destination is a host name, not a URL", s)
		}
		return badDestination(destinationForms, "%q is not a CIDR range: %q is not an IP address", s, addr)
	}
	if err := checkAddr(s, a); err != nil {
		return Destination{}, err
	}
	bitsText, portText, hasPort := strings.Cut(rest, ":")
	bits, err := strconv.Atoi(bitsText)
	if !digits(bitsText) || err != nil || bits > a.BitLen() {
		return badDestination("e.g. 10.0.0.0/8 or fd00::/8", "%q: the prefix length /%s is not a number from 0 to %d", s, bitsText, a.BitLen())
	}
	prefix := netip.PrefixFrom(a, bits)
	if masked := prefix.Masked(); masked != prefix {
		return badDestination(fmt.Sprintf("the range is %s", masked), "%q has address bits set beyond its /%d", s, bits)
	}
	d := Destination{Prefix: prefix}
	if hasPort {
		if d.Port, err = parsePort(s, portText); err != nil {
			return Destination{}, err
		}
	}
	return d, nil
}

// checkAddr refuses the addresses a destination cannot name: one with a
// zone (an interface of one machine), or an IPv4 address written as IPv6,
// which would compare unequal to itself written as IPv4.
func checkAddr(s string, a netip.Addr) error {
	switch {
	case a.Zone() != "":
		_, err := badDestination("write the address without its %zone", "%q has a zone, which names an interface of one machine", s)
		return err
	case a.Is4In6():
		_, err := badDestination(fmt.Sprintf("write it as %s", a.Unmap()), "%q is an IPv4 address written as IPv6", s)
		return err
	}
	return nil
}

// hostName checks h, the host part of the destination s, as a host name or
// a wildcard, and returns it lower-case.
func hostName(s, h string) (string, error) {
	name := strings.TrimPrefix(h, "*.")
	if strings.Contains(name, "*") {
		_, err := badDestination(wildcardHint, "%q: * goes only in a leading *. label", s)
		return "", err
	}
	if name == "" {
		_, err := badDestination(destinationForms, "%q names no host", s)
		return "", err
	}
	if len(name) > 253 {
		_, err := badDestination("", "%q: a host name is at most 253 characters", s)
		return "", err
	}
	for _, r := range name {
		switch {
		case r >= 0x80:
			_, err := badDestination("write the name's ASCII form (xn--…)", "%q has a character outside ASCII", s)
			return "", err
		case !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.'):
			_, err := badDestination(destinationForms, "%q: %q is not allowed in a host name (letters, digits, '-' and '.')", s, r)
			return "", err
		}
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		switch {
		case l == "":
			_, err := badDestination(destinationForms, "%q has an empty label (two dots, or a dot at an end)", s)
			return "", err
		case len(l) > 63:
			_, err := badDestination("", "%q has a label of %d characters; DNS allows 63", s, len(l))
			return "", err
		case l[0] == '-' || l[len(l)-1] == '-':
			_, err := badDestination(destinationForms, "%q: a label of a host name cannot start or end with '-'", s)
			return "", err
		}
	}
	if digits(labels[len(labels)-1]) {
		_, err := badDestination("an IPv4 address is four numbers from 0 to 255; a host name does not end in a number", "%q is neither an IP address nor a host name", s)
		return "", err
	}
	return strings.ToLower(h), nil
}

// parsePort reads the port text of the destination s.
func parsePort(s, text string) (int, error) {
	if text == "" {
		_, err := badDestination(portHint, "%q has a ':' but no port", s)
		return 0, err
	}
	if !digits(text) {
		_, err := badDestination(portHint, "%q: port %q is not a number", s, text)
		return 0, err
	}
	n, err := strconv.Atoi(text)
	if err != nil || n < 1 || n > 65535 {
		_, err := badDestination(portHint, "%q: port %s is out of range", s, text)
		return 0, err
	}
	return n, nil
}

// digits reports whether s is one or more ASCII digits.
func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// network reads the keys of box (or of defaults: box "") that rule what
// leaves it: egress:, private:, dns: and credentials:.
func (p *parser) network(box string, fields map[string]entry, s *Settings, set fieldSet) {
	if f, ok := fields["egress"]; ok {
		if e, ok := p.egress(f.value); ok {
			s.Egress = e
			p.wrote(box, "egress", f.value)
		} else {
			p.unreadRules(box)
		}
		set["egress"] = true
	}
	if f, ok := fields["private"]; ok {
		if d, ok := p.destinationList("private", f.value); ok {
			s.Private = d
			p.wrote(box, "private", f.value)
		} else {
			p.unreadRules(box)
		}
		set["private"] = true
	}
	if f, ok := fields["dns"]; ok {
		if d, ok := p.dns(f.value); ok {
			s.DNS = d
		}
		set["dns"] = true
	}
	if f, ok := fields["credentials"]; ok {
		p.credentials(box, f.value, s)
		set["credentials"] = true
	}
}

// egress reads egress: open, none, or a list of destinations.
func (p *parser) egress(n *yaml.Node) (Egress, bool) {
	const hint = `egress: open (any public address), none, or a list such as [api.anthropic.com, "*.github.com"]`
	scalar := n.Kind == yaml.ScalarNode && n.Tag != "!!null"
	switch {
	case scalar && n.Value == "open":
		return Egress{Mode: EgressOpen}, true
	case scalar && n.Value == "none":
		return Egress{Mode: EgressNone}, true
	case n.Kind == yaml.SequenceNode && len(n.Content) == 0:
		p.errorf(n, "write egress: none to let the box reach nothing", "egress: [] lists no destination")
	case n.Kind == yaml.SequenceNode:
		if allow, ok := p.destinationList("egress", n); ok {
			return Egress{Mode: EgressList, Allow: allow}, true
		}
	case scalar:
		p.errorf(n, singleHint("egress", n.Value, hint), "egress is open, none or a list of destinations, not %q", n.Value)
	default:
		p.errorf(n, hint, "egress is open, none or a list of destinations, found %s", describe(n))
	}
	return Egress{}, false
}

// singleHint is the hint for key: written with a destination v where a list
// is wanted: the list of one, when v is a destination.
func singleHint(key, v, otherwise string) string {
	// A word (closed, all) is more likely a mode mistyped than a host.
	if _, err := ParseDestination(v); err != nil || !strings.ContainsAny(v, ".:/") {
		return otherwise
	}
	if strings.HasPrefix(v, "*") {
		v = strconv.Quote(v)
	}
	return fmt.Sprintf("one destination is a list of one: %s: [%s]", key, v)
}

// destinationList reads the list n of key's destinations, refusing one
// that says the same as an earlier one. ok is false when any is refused.
func (p *parser) destinationList(key string, n *yaml.Node) ([]Destination, bool) {
	if n.Kind != yaml.SequenceNode {
		what := describe(n)
		if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
			p.errorf(n, singleHint(key, n.Value, destinationForms), "%s is a list of destinations, not %s", key, what)
		} else {
			p.errorf(n, destinationForms, "%s is a list of destinations, found %s", key, what)
		}
		return nil, false
	}
	type first struct {
		text string
		line int
	}
	seen := map[Destination]first{}
	out := []Destination{}
	ok := true
	for _, item := range n.Content {
		if item.Kind != yaml.ScalarNode || item.Tag == "!!null" {
			p.errorf(item, destinationForms, "%s: expected a destination, found %s", key, describe(item))
			ok = false
			continue
		}
		d, err := ParseDestination(item.Value)
		if err != nil {
			p.destinationError(item, key, err)
			ok = false
			continue
		}
		if f, dup := seen[d]; dup {
			if f.text == item.Value {
				p.errorf(item, "remove one of them", "%s: duplicate destination %q (first at line %d)", key, item.Value, f.line)
			} else {
				p.errorf(item, "remove one of them", "%s: %q is the same destination as %q (line %d)", key, item.Value, f.text, f.line)
			}
			ok = false
			continue
		}
		seen[d] = first{item.Value, item.Line}
		out = append(out, d)
	}
	return out, ok
}

// unreadRules marks box's (or the defaults', box "") egress: or private: as
// refused: its settings hold what it would have inherited instead, so
// nothing more is said of them.
func (p *parser) unreadRules(box string) {
	if p.badRules == nil {
		p.badRules = map[string]bool{}
	}
	p.badRules[box] = true
}

// closedEgress refuses each destination of egress: that lies wholly in
// ranges the gate closes whatever egress: says and that private: does not
// open: accepted, it would never be reached. What the defaults say is
// reported at the defaults; a box or pool is checked when it writes its own
// egress: or private:, at what it wrote.
func (p *parser) closedEgress(cfg *Config) {
	p.closedIn("", "the defaults", cfg.Defaults)
	for _, b := range cfg.Boxes {
		p.closedIn(b.Name, "box "+b.Name, b.Settings)
	}
	for _, pool := range cfg.Pools {
		p.closedIn(pool.Name, "pool "+pool.Name, pool.Settings)
	}
}

// closedIn checks the egress: of scope (a box's or a pool's name, "" for
// the defaults), whose settings are s, against its private:, and the
// executor's egress: against the executor's private: when it has a door.
func (p *parser) closedIn(scope, what string, s Settings) {
	p.closedList(scope, what, "", s.Egress, s.Private)
	if s.Executor.Door {
		p.closedList(scope, what, "executor.", s.Executor.Egress, s.Executor.Private)
	}
}

// closedList checks one side's egress (the agent's, prefix "", or the
// executor's, prefix "executor.") against that side's private.
func (p *parser) closedList(scope, what, prefix string, egress Egress, private []Destination) {
	bad := p.badRules[scope] || p.badRules[""]
	if prefix != "" {
		bad = p.badRules[executorScope(scope)] || p.badRules[executorScope("")]
	}
	if egress.Mode != EgressList || bad {
		return
	}
	list, ownPrivate := p.at[scope][prefix+"egress"], p.at[scope][prefix+"private"]
	inherited := list == nil
	if inherited {
		if ownPrivate == nil {
			return // the defaults' own check says it
		}
		list = p.at[""][prefix+"egress"]
	}
	if list == nil || len(list.Content) != len(egress.Allow) {
		return
	}
	// The keys as boxes.yaml nests them: egress: or executor: egress:.
	egressKey, privateKey, side := "egress:", "private:", "box"
	if prefix != "" {
		egressKey, privateKey, side = "executor: egress:", "executor: private:", "executor"
		what += "'s executor"
	}
	for i, d := range egress.Allow {
		if !d.Prefix.IsValid() {
			continue // a name is resolved, and checked, by the gate
		}
		held, all := gate.ClosedRanges(d.Prefix)
		if !all || opens(private, d) {
			continue
		}
		at, msg := list.Content[i], fmt.Sprintf("%s %q is in %s the gate closes whatever %s says", egressKey, list.Content[i].Value, closedText(held), egressKey)
		if inherited {
			at, msg = ownPrivate, fmt.Sprintf("%s %q, from the defaults, is in %s the gate closes whatever %s says, and %s's %s does not open it", egressKey, list.Content[i].Value, closedText(held), egressKey, what, strings.TrimPrefix(privateKey, "executor: "))
		}
		hint := fmt.Sprintf("to reach it, list it under %s (private: [%s]), which opens it to the %s; %s cannot", privateKey, strconv.Quote(d.String()), side, egressKey)
		if d.Prefix.Addr().Is6() {
			// The gate refuses an IPv6 address given as the destination,
			// whatever the rules say.
			hint = "the gate takes IPv6 destinations by name only: list the name under " + privateKey + ", which opens it to the addresses it resolves to"
		}
		p.errorf(at, hint, "%s", msg)
	}
}

// closedText names closed ranges for a message: "10.0.0.0/8, a private
// range", or each with its kind in brackets, ending in ", which".
func closedText(held []gate.ClosedRange) string {
	if len(held) == 1 {
		return held[0].Prefix.String() + ", " + held[0].Kind
	}
	parts := make([]string, len(held))
	for i, c := range held {
		parts[i] = fmt.Sprintf("%s (%s)", c.Prefix, c.Kind)
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1] + ", which"
}

// opens reports whether a range of private holds all of d on d's port: the
// gate lets private: open a closed range, to names and addresses alike,
// but takes no IPv6 address as a destination.
func opens(private []Destination, d Destination) bool {
	if d.Prefix.Addr().Is6() {
		return false
	}
	for _, e := range private {
		if e.Prefix.IsValid() && e.Prefix.Bits() <= d.Prefix.Bits() && e.Prefix.Contains(d.Prefix.Addr()) && (e.Port == 0 || e.Port == d.Port) {
			return true
		}
	}
	return false
}

// destinationError reports err, from ParseDestination, at n, after what.
func (p *parser) destinationError(n *yaml.Node, what string, err error) {
	var de *destinationError
	if errors.As(err, &de) {
		p.errorf(n, de.hint, "%s: %s", what, de.msg)
		return
	}
	p.errorf(n, destinationForms, "%s: %v", what, err)
}

// dns reads dns:, a list of name servers' IP addresses.
func (p *parser) dns(n *yaml.Node) ([]netip.Addr, bool) {
	const hint = "dns: lists name servers by IP address, e.g. [192.0.2.53, 2001:db8::53]"
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, hint, "dns is a list of IP addresses, found %s", describe(n))
		return nil, false
	}
	seen := map[netip.Addr]int{}
	out := []netip.Addr{}
	errs := len(p.errs)
	for _, item := range n.Content {
		if item.Kind != yaml.ScalarNode || item.Tag == "!!null" {
			p.errorf(item, hint, "dns: expected an IP address, found %s", describe(item))
			continue
		}
		a, err := netip.ParseAddr(item.Value)
		switch {
		case err != nil:
			p.errorf(item, hint, "dns: %q is not an IP address", item.Value)
		case a.Zone() != "":
			p.errorf(item, "write the address without its %zone", "dns: %q has a zone, which names an interface of one machine", item.Value)
		case a.Is4In6():
			p.errorf(item, fmt.Sprintf("write it as %s", a.Unmap()), "dns: %q is an IPv4 address written as IPv6", item.Value)
		case seen[a] > 0:
			p.errorf(item, "remove one of them", "dns: duplicate name server %s (first at line %d)", item.Value, seen[a])
		default:
			seen[a] = item.Line
			out = append(out, a)
		}
	}
	return out, len(p.errs) == errs
}
