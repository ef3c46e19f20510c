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

// egress shows the executor's side: its own rules and refusals when it has
// a door, that no rule applies when it has none; the gate's refusals are
// split by side, each side's last N kept.
func TestEgressShowsTheExecutorsSide(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	all := []egress.Refusal{
		{Time: at, Destination: "a.test:443", Rule: egress.RuleNotAllowed, Reason: "agent 1"},
		{Time: at, Destination: "x.test:443", Rule: egress.RuleNotAllowed, Reason: "executor 1", Side: egress.SideExecutor},
		{Time: at, Destination: "b.test:443", Rule: egress.RuleNotAllowed, Reason: "agent 2"},
		{Time: at, Destination: "y.test:443", Rule: egress.RuleNone, Reason: "executor 2", Side: egress.SideExecutor},
	}
	agent, executor := bySide(all)
	if len(agent) != 2 || len(executor) != 2 || agent[1].Reason != "agent 2" || executor[1].Reason != "executor 2" {
		t.Fatalf("bySide: %+v | %+v", agent, executor)
	}
	if got := lastOf(executor, 1); len(got) != 1 || got[0].Reason != "executor 2" {
		t.Errorf("lastOf: %+v", got)
	}
	r := egressReport{FormatVersion: EgressFormat, Box: "alpha", Gate: "running", Current: true, Egress: "none", Refusals: agent,
		Executor: egressExecutor{Door: true, Egress: "list", Allow: []string{"api.github.com"}, Private: []string{"10.0.0.0/8:5432"}, Refusals: executor}}
	var out bytes.Buffer
	if err := writeEgress(&out, r); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	_, exec, ok := strings.Cut(text, "\nexecutor: its one way out is the gate too (http://exec-gate:3130)")
	if !ok {
		t.Fatalf("no executor section:\n%s", text)
	}
	for _, want := range []string{"egress:   1 allowed", "api.github.com", "private:  open exceptions: 10.0.0.0/8:5432", "recent refusals (2)", "y.test:443"} {
		if !strings.Contains(exec, want) {
			t.Errorf("executor section lacks %q:\n%s", want, exec)
		}
	}
	if strings.Contains(exec, "a.test") || strings.Contains(strings.TrimSuffix(text, exec), "x.test") {
		t.Errorf("refusals shown on the wrong side:\n%s", text)
	}
	data, _ := json.Marshal(r)
	var back struct {
		Executor struct {
			Door     bool     `json:"door"`
			Egress   string   `json:"egress"`
			Allow    []string `json:"allow"`
			Refusals []struct {
				Side string `json:"side"`
			} `json:"refusals"`
		} `json:"executor"`
	}
	if err := json.Unmarshal(data, &back); err != nil || !back.Executor.Door || back.Executor.Egress != "list" || len(back.Executor.Refusals) != 2 || back.Executor.Refusals[0].Side != "executor" {
		t.Errorf("egress --json executor: %s", data)
	}

	r.Executor = egressExecutor{}
	out.Reset()
	if err := writeEgress(&out, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "executor: reaches out by itself (boxes.yaml gives it no egress:), under no rule of the gate") {
		t.Errorf("an executor without a door:\n%s", out.String())
	}
}
