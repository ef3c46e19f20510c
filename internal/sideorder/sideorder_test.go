package sideorder

import (
	"strings"
	"testing"
)

func TestBefore(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"du|health|quiesce|pause|unpause", "health|quiesce|du|pause|unpause"},
		{"health|du|quiesce|pause", "health|quiesce|du|pause"},
		{"health|quiesce|du|pause", "health|quiesce|du|pause"},
		{"health|quiesce|pause|du", "health|quiesce|pause|du"},
		{"health|quiesce|pause", "health|quiesce|pause"},
		{"du|health", "du|health"},
	} {
		if got := strings.Join(Before(strings.Split(c.in, "|"), "du", "pause"), "|"); got != c.want {
			t.Errorf("Before(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}
