package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	egress "github.com/hermes-box/boxes/gate"
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

// What the agent chose (a refusal's destination and the reason quoting it)
// is printed as data: format verbs as sent, in the text and in --json; a
// terminal escape or a bidirectional override is shown as its escape
// rather than obeyed (in --json, a \u escape that decodes to what was sent).
func TestEgressPrintsRefusalsAsData(t *testing.T) {
	verbs := "evil%2eexample%d%s%v%x%%%!:8080"
	refusals := []egress.Refusal{
		{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Destination: verbs, Rule: egress.RuleNotAllowed, Reason: verbs + " is not a destination listed under the box's egress (%T %p %[1]s)"},
		{Time: time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC), Destination: "red\x1b[31m\u009b2J.example:80", Rule: egress.RuleNotAllowed, Reason: "rtl \u202eevil"},
	}
	r := egressReport{FormatVersion: EgressFormat, Box: "alpha", Gate: "running", Current: true, Egress: "open", Refusals: refusals}
	var out bytes.Buffer
	if err := writeEgress(&out, r); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"  " + verbs + "  ", verbs + " is not a destination listed under the box's egress (%T %p %[1]s)", `red\x1b[31m\u009b2J.example:80`, `rtl \u202eevil`} {
		if !strings.Contains(got, want) {
			t.Errorf("egress text lacks %q:\n%s", want, got)
		}
	}
	if strings.ContainsAny(got, "\x1b\u009b\u202e") {
		t.Errorf("egress text carries a terminal escape or an override as such:\n%q", got)
	}
	var data bytes.Buffer
	if err := printJSON(&Env{Streams: Streams{Out: &data}}, r); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(data.String(), "\u009b\u202e") {
		t.Errorf("egress --json carries a C1 control or an override as such:\n%s", data.String())
	}
	var back egressReport
	if err := json.Unmarshal(data.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	for i, f := range back.Refusals {
		if f.Destination != refusals[i].Destination || f.Reason != refusals[i].Reason {
			t.Errorf("egress --json refusal %d: %q, %q; want %q, %q", i, f.Destination, f.Reason, refusals[i].Destination, refusals[i].Reason)
		}
	}
}
