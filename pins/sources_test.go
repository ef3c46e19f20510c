package pins_test

import (
	"strings"
	"testing"

	"github.com/hermes-box/boxes/pins"
)

// lock update's help names every pin once, grouped by where it comes from.
func TestSourcesNameEveryPin(t *testing.T) {
	got := pins.Sources(78)
	for _, line := range strings.Split(got, "\n") {
		if len(line) > 78 {
			t.Errorf("line longer than 78: %q", line)
		}
	}
	flat := strings.Join(strings.Fields(got), " ")
	for _, want := range []string{"base (the base image's digest", "claude, codex and executor (npm latest and its integrity)", "and uv (latest release"} {
		if !strings.Contains(flat, want) {
			t.Errorf("%q lacks %q", flat, want)
		}
	}
}
