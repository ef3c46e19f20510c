package gate

import (
	"net"
	"net/netip"

	"github.com/stripe/smokescreen/pkg/smokescreen"
)

// Address ranges, in three sets.
//
// smokescreen closes by itself every address that is not global unicast
// (loopback, link-local, multicast, unspecified, broadcast), the private
// ranges (10/8, 172.16/12, 192.168/16, fc00::/7), CGNAT (100.64/10) and
// IPv6 forms that embed an IPv4 address (NAT64, 6to4, Teredo).
//
// reserved are what it leaves open that no box has a use for: they are
// added to its DenyRanges, beside Config.Closed.
//
// privateRanges are what a host name listed under private may resolve to:
// the ranges of DESIGN's "private ranges" that smokescreen closes.
var (
	reserved = prefixes(
		"0.0.0.0/8",     // "this network"; 0.0.0.0 itself reaches the local host
		"192.0.0.0/24",  // IETF protocol assignments
		"198.18.0.0/15", // benchmarking, used by some for internal networks
		"240.0.0.0/4",   // reserved
		"::/96",         // IPv4-compatible IPv6
		"100::/64",      // discard-only
		"fec0::/10",     // site-local
	)
	privateRanges = prefixes(
		"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", // RFC 1918
		"100.64.0.0/10",  // CGNAT
		"127.0.0.0/8",    // loopback
		"169.254.0.0/16", // link-local
		"::1/128",        // loopback
		"fc00::/7",       // unique-local
		"fe80::/10",      // link-local
	)
)

// ClosedRange is a range every gate closes whatever its egress allows, and
// what it is, for a person ("a private range"). A private exception opens
// any of them.
type ClosedRange struct {
	Prefix netip.Prefix
	Kind   string
}

// closedRanges are the private ranges, the reserved ones and what
// smokescreen closes besides (multicast, IPv6 forms that embed an IPv4
// address), each with its kind.
var closedRanges = func() []ClosedRange {
	kinds := []struct{ prefix, kind string }{
		{"10.0.0.0/8", "a private range"}, {"172.16.0.0/12", "a private range"}, {"192.168.0.0/16", "a private range"},
		{"100.64.0.0/10", "the carrier-grade NAT range"},
		{"127.0.0.0/8", "the loopback range"}, {"::1/128", "the loopback address"},
		{"169.254.0.0/16", "the link-local range (cloud metadata)"}, {"fe80::/10", "the link-local range"},
		{"fc00::/7", "the unique-local range"},
		{"224.0.0.0/4", "the multicast range"}, {"ff00::/8", "the multicast range"},
		{"64:ff9b::/96", "a range that embeds IPv4 addresses"}, {"2002::/16", "a range that embeds IPv4 addresses"}, {"2001::/32", "a range that embeds IPv4 addresses"},
	}
	var out []ClosedRange
	for _, k := range kinds {
		out = append(out, ClosedRange{Prefix: netip.MustParsePrefix(k.prefix), Kind: k.kind})
	}
	for _, p := range reserved {
		out = append(out, ClosedRange{Prefix: p, Kind: "a reserved range"})
	}
	return out
}()

// ClosedRanges are the closed ranges that hold addresses of p (the
// narrowest one alone when one holds all of p), and whether they hold every
// address of p: a destination no rule of egress can open.
func ClosedRanges(p netip.Prefix) (held []ClosedRange, all bool) {
	p = p.Masked()
	var holes []netip.Prefix
	var narrowest *ClosedRange
	for _, c := range closedRanges {
		if !c.Prefix.Overlaps(p) {
			continue
		}
		held = append(held, c)
		holes = append(holes, c.Prefix)
		if c.Prefix.Bits() <= p.Bits() && (narrowest == nil || c.Prefix.Bits() > narrowest.Prefix.Bits()) {
			narrowest = &c
		}
	}
	if narrowest != nil {
		return []ClosedRange{*narrowest}, true
	}
	return held, len(held) > 0 && len(without(p, holes)) == 0
}

// PrivateRanges are the ranges every gate closes whatever its rules say
// (Config.Private opens exceptions), as CIDR text.
func PrivateRanges() []string {
	out := make([]string, len(privateRanges))
	for i, p := range privateRanges {
		out[i] = p.String()
	}
	return out
}

func prefixes(s ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(s))
	for i, p := range s {
		out[i] = netip.MustParsePrefix(p)
	}
	return out
}

// without is p with the addresses of holes taken out, as the prefixes that
// cover what is left. smokescreen lets an allowed range win over a denied
// one, so an allowed range must not hold an address that stays closed.
func without(p netip.Prefix, holes []netip.Prefix) []netip.Prefix {
	for _, h := range holes {
		if !p.Overlaps(h) {
			continue
		}
		if h.Bits() <= p.Bits() {
			return nil // h covers p
		}
		lo, hi := halves(p)
		return append(without(lo, holes), without(hi, holes)...)
	}
	return []netip.Prefix{p}
}

// halves splits p into its two prefixes one bit longer.
func halves(p netip.Prefix) (netip.Prefix, netip.Prefix) {
	bits := p.Bits() + 1
	b := p.Addr().AsSlice()
	lo := netip.PrefixFrom(p.Addr(), bits)
	b[p.Bits()/8] |= 0x80 >> (p.Bits() % 8)
	a, _ := netip.AddrFromSlice(b)
	return lo, netip.PrefixFrom(a, bits)
}

// ruleRanges are prefixes as smokescreen's ranges on port (0: any).
func ruleRanges(ps []netip.Prefix, port int) []smokescreen.RuleRange {
	out := make([]smokescreen.RuleRange, 0, len(ps))
	for _, p := range ps {
		out = append(out, smokescreen.RuleRange{
			Net:  net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())},
			Port: port,
		})
	}
	return out
}

// contains reports whether any of ps holds a.
func contains(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// addressKind names the kind of a closed address for a person: "a loopback
// address", "a private address", …
func addressKind(a netip.Addr) string {
	switch {
	case a.IsLoopback():
		return "a loopback address"
	case a.IsLinkLocalUnicast():
		return "a link-local address"
	case a.IsMulticast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast():
		return "a multicast address"
	case a.IsUnspecified():
		return "the unspecified address"
	case a.Is4() && netip.MustParsePrefix("100.64.0.0/10").Contains(a):
		return "a carrier-grade NAT address"
	case a.Is6() && netip.MustParsePrefix("fc00::/7").Contains(a):
		return "a unique-local address"
	case a.IsPrivate():
		return "a private address"
	case contains(reserved, a):
		return "a reserved address"
	}
	return "an address that is not public"
}
