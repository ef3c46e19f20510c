package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// egress --json names the host as ls --json does ("" for the local engine);
// the text names it in words.
func TestEgressNamesTheHost(t *testing.T) {
	for _, c := range []struct{ host, words string }{{"", "the local engine"}, {"far", "host far"}} {
		r := egressReport{FormatVersion: EgressFormat, Box: "alpha", Host: c.host, Gate: "missing", Egress: "open"}
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back map[string]any
		if err := json.Unmarshal(data, &back); err != nil || back["host"] != c.host {
			t.Errorf("host %q: JSON %s", c.host, data)
		}
		var text bytes.Buffer
		if err := writeEgress(&text, r); err != nil {
			t.Fatal(err)
		}
		if first, _, _ := strings.Cut(text.String(), "\n"); !strings.Contains(first, "box alpha ("+c.words+")") {
			t.Errorf("host %q: text %q", c.host, first)
		}
	}
}
