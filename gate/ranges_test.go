package gate

import (
	"net/netip"
	"testing"
)

func TestWithout(t *testing.T) {
	ten := netip.MustParsePrefix("10.0.0.0/8")
	left := without(ten, prefixes("10.1.2.3/32", "172.17.0.1/32"))
	if len(left) != 24 {
		t.Errorf("10/8 without one address is %d prefixes, want 24: %v", len(left), left)
	}
	for addr, want := range map[string]bool{"10.1.2.3": false, "10.1.2.2": true, "10.1.2.4": true, "10.0.0.0": true, "10.255.255.255": true, "11.0.0.0": false} {
		if got := contains(left, netip.MustParseAddr(addr)); got != want {
			t.Errorf("%s left open: %v, want %v", addr, got, want)
		}
	}
	if left := without(netip.MustParsePrefix("172.17.0.0/16"), prefixes("172.16.0.0/12")); left != nil {
		t.Errorf("a range inside a hole: %v left", left)
	}
	if left := without(netip.MustParsePrefix("fc00::/7"), prefixes("10.0.0.0/8")); len(left) != 1 {
		t.Errorf("another family's hole changed the range: %v", left)
	}
	ula := without(netip.MustParsePrefix("fc00::/7"), prefixes("fd00::1/128"))
	if contains(ula, netip.MustParseAddr("fd00::1")) || !contains(ula, netip.MustParseAddr("fd00::2")) || len(ula) != 121 {
		t.Errorf("fc00::/7 without fd00::1: %d prefixes", len(ula))
	}
}

// ClosedRanges names the ranges a destination falls in, and whether all of
// it is closed: a wider range keeps its public addresses.
func TestClosedRanges(t *testing.T) {
	for _, c := range []struct {
		in   string
		held string // the first range held, "" for none
		all  bool
	}{
		{"10.0.0.1/32", "10.0.0.0/8", true},
		{"10.1.0.0/16", "10.0.0.0/8", true},
		{"172.17.0.1/32", "172.16.0.0/12", true},
		{"127.0.0.1/32", "127.0.0.0/8", true},
		{"169.254.169.254/32", "169.254.0.0/16", true},
		{"100.100.100.100/32", "100.64.0.0/10", true},
		{"224.0.0.0/3", "224.0.0.0/4", true}, // multicast and reserved, together
		{"fd00::1/128", "fc00::/7", true},
		{"::1/128", "::1/128", true},
		{"fe80::/64", "fe80::/10", true},
		{"10.0.0.0/7", "10.0.0.0/8", false}, // 11/8 is public
		{"0.0.0.0/0", "10.0.0.0/8", false},
		{"198.51.100.7/32", "", false},
		{"2001:db8::1/128", "", false},
	} {
		held, all := ClosedRanges(netip.MustParsePrefix(c.in))
		first := ""
		if len(held) > 0 {
			first = held[0].Prefix.String()
		}
		if first != c.held || all != c.all || (len(held) > 0 && held[0].Kind == "") {
			t.Errorf("ClosedRanges(%s) = %v, %v; want %s first, all %v", c.in, held, all, c.held, c.all)
		}
	}
}
