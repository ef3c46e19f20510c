package compose

import (
	"slices"
	"testing"
)

// MachineClosed reads what a gate closes from its label and compares it with
// the machine's addresses now; a gate without the label does not say.
func TestMachineClosed(t *testing.T) {
	for _, c := range []struct {
		name       string
		labels     map[string]string
		now        []string
		open, gone []string
		known      bool
	}{
		{"the same", map[string]string{ClosedLabel: "192.0.2.10/32,198.51.100.7/32"}, []string{"192.0.2.10/32", "198.51.100.7/32"}, nil, nil, true},
		{"gained", map[string]string{ClosedLabel: "192.0.2.10/32"}, []string{"192.0.2.10/32", "198.51.100.77/32"}, []string{"198.51.100.77/32"}, nil, true},
		{"lost", map[string]string{ClosedLabel: "192.0.2.10/32,198.51.100.77/32"}, []string{"192.0.2.10/32"}, nil, []string{"198.51.100.77/32"}, true},
		{"none closed", map[string]string{ClosedLabel: ""}, []string{"198.51.100.77/32"}, []string{"198.51.100.77/32"}, nil, true},
		{"none at all", map[string]string{ClosedLabel: ""}, nil, nil, nil, true},
		{"unrecorded", map[string]string{CredentialsLabel: "{}"}, []string{"198.51.100.77/32"}, nil, nil, false},
	} {
		open, gone, known := MachineClosed(c.labels, c.now)
		if !slices.Equal(open, c.open) || !slices.Equal(gone, c.gone) || known != c.known {
			t.Errorf("%s: open %v gone %v known %v; want %v %v %v", c.name, open, gone, known, c.open, c.gone, c.known)
		}
	}
	if got := Addresses([]string{"198.51.100.77/32", "2001:db8::1/128", "10.0.0.0/8"}); got != "198.51.100.77, 2001:db8::1, 10.0.0.0/8" {
		t.Errorf("Addresses: %q", got)
	}
}
