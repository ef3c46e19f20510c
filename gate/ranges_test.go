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
