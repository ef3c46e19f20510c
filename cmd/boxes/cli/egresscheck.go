package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/compose"
	egress "github.com/hermes-box/boxes/gate"
	"github.com/hermes-box/boxes/internal/text"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/workspace"
)

// EgressCheckFormat is the format_version of egress --check --json.
const EgressCheckFormat = 1

// The exit codes of egress --check.
const (
	checkAllowed = 0
	checkRefused = 1
	// checkBad: no answer can be given (a bad URL, a box boxes.yaml does
	// not declare, a boxes.yaml validate refuses, any other error).
	checkBad = 2
)

// egressAnswer is egress --check --json: whether the box's gate lets a
// request for a URL through, and which entry of boxes.yaml decides.
type egressAnswer struct {
	FormatVersion int    `json:"format_version"`
	Box           string `json:"box"`
	Host          string `json:"host"` // boxes.yaml's name, "" for the local engine
	URL           string `json:"url"`  // as given
	// Destination is host:port, as the gate reads the URL.
	Destination string `json:"destination"`
	Allowed     bool   `json:"allowed"`
	// Rule is a refusal's rule (not-allowed, none, private-range, closed,
	// resolve-failed, …, as in egress --json's refusals); "" when allowed.
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
	// By is the entry of boxes.yaml that allows it; null when refused.
	By *egressEntry `json:"by"`
	// Address is where the gate connects: the URL's address, or the one
	// its name resolved to with --resolve; "" when refused or not resolved.
	Address string `json:"address"`
	// Resolved says whether a name was resolved here (--resolve); false
	// for an address.
	Resolved bool `json:"resolved"`
	// Opened is the private: entry that opens Address, which is in a range
	// the gate closes unless listed; null when none does.
	Opened *egressEntry `json:"opened"`
}

// egressEntry is one entry of boxes.yaml's rules and where it is written.
type egressEntry struct {
	// Setting is egress, private or credential.
	Setting string `json:"setting"`
	// Entry is the destination as boxes.yaml reads it, "open" for
	// egress: open, or the credential's name.
	Entry string `json:"entry"`
	File  string `json:"file"`
	Line  int    `json:"line"` // 0 when not written: egress is open by default
}

// runCheck is egress NAME --check URL: the answer on stdout, exit 0 when
// allowed, 1 when refused, 2 when no answer can be given.
func runCheck(cmd *cobra.Command, env *Env, name, rawURL string, resolve, asJSON bool) error {
	var a egressAnswer
	err := inWorkspace(env, func(ws *workspace.Workspace) error {
		var err error
		a, err = checkEgress(cmd.Context(), ws, name, rawURL, resolve)
		return err
	})
	if err != nil {
		return &ExitError{Code: checkBad, Err: err}
	}
	if asJSON {
		err = printJSON(env, a)
	} else {
		err = writeCheck(env.Out, a)
	}
	if err != nil {
		return &ExitError{Code: checkBad, Err: err}
	}
	if !a.Allowed {
		return &ExitError{Code: checkRefused}
	}
	return nil
}

// checkEgress asks the gate box name would be made with now (boxes.yaml's
// rules, the engine machine's addresses) about rawURL, offline.
func checkEgress(ctx context.Context, ws *workspace.Workspace, name, rawURL string, resolve bool) (egressAnswer, error) {
	b, ok := ws.Config.Box(name)
	if !ok {
		return egressAnswer{}, ws.Undeclared(name)
	}
	closed, err := ws.ClosedAddresses(b.Host)
	if err != nil {
		return egressAnswer{}, fmt.Errorf("the addresses of the engine's machine, which the gate closes: %w", err)
	}
	cfg := compose.GateConfig(b, compose.Door{Closed: closed}, true)
	got, err := egress.Check(ctx, cfg, rawURL, resolve)
	if err != nil {
		return egressAnswer{}, err
	}
	a := egressAnswer{FormatVersion: EgressCheckFormat, Box: name, Host: b.Host, URL: rawURL,
		Destination: got.Destination, Allowed: got.Allowed, Rule: got.Rule, Reason: got.Reason, Address: got.Address}
	if !got.Allowed {
		a.Address = ""
		return a, nil
	}
	places := ws.Config.RulesAt(b)
	a.By = entryOf(b, places, got.By)
	if got.Opened != nil {
		a.Opened = entryOf(b, places, egress.Match{Setting: egress.ByPrivate, Rule: *got.Opened})
	}
	if _, err := netip.ParseAddr(hostOf(rawURL)); err != nil && got.Address != "" {
		a.Resolved = true // a name, and its address
	}
	return a, nil
}

// entryOf is the entry of box b's rules that m names, where places say.
func entryOf(b spec.Box, places spec.RulePlaces, m egress.Match) *egressEntry {
	e := &egressEntry{Setting: m.Setting}
	at := func(p spec.Pos) {
		e.File, e.Line = shown(p.File), p.Line
	}
	find := func(ds []spec.Destination, pos []spec.Pos) {
		for i, d := range ds {
			if compose.GateRule(d) == m.Rule {
				e.Entry = d.String()
				if i < len(pos) {
					at(pos[i])
				}
				return
			}
		}
	}
	switch m.Setting {
	case egress.ByEgress:
		find(b.Egress.Allow, places.Allow)
	case egress.ByPrivate:
		find(b.Private, places.Private)
	case egress.ByCredential:
		e.Entry = m.Credential
		at(places.Credentials[m.Credential])
	case egress.ByOpen:
		e.Setting, e.Entry = egress.ByEgress, "open"
		at(places.Egress)
	}
	if e.Line == 0 {
		e.File = ""
	}
	return e
}

// writeCheck prints the answer as one line, and a second for a name the
// gate resolves when the request is made.
func writeCheck(w io.Writer, a egressAnswer) error {
	u := text.Printable(a.URL)
	if !a.Allowed {
		_, err := fmt.Fprintf(w, "refused: %s (%s): %s\n", u, a.Rule, text.Printable(a.Reason))
		return err
	}
	line := fmt.Sprintf("allowed: %s by %s", u, entryText(a.By))
	switch {
	case a.Opened != nil:
		line += fmt.Sprintf(", at %s opened by %s", a.Address, entryText(a.Opened))
	case a.Resolved:
		line += ", at " + a.Address
	}
	fmt.Fprintln(w, line)
	if a.Address == "" {
		fmt.Fprintf(w, "  %s is not resolved here: the gate resolves it for each request, and refuses an address it closes (--resolve checks one now)\n", text.Printable(hostOf(a.URL)))
	}
	return nil
}

// hostOf is rawURL's host, "" when it has none.
func hostOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// entryText is an entry as a person reads it: "egress: api.github.com
// (boxes.yaml:12)", "credential anthropic (boxes.yaml:9)".
func entryText(e *egressEntry) string {
	var s string
	switch e.Setting {
	case egress.ByCredential:
		s = "credential " + e.Entry
	default:
		s = e.Setting + ": " + e.Entry
	}
	switch {
	case e.Line > 0:
		s += fmt.Sprintf(" (%s:%d)", e.File, e.Line)
	case e.Setting == egress.ByEgress && e.Entry == "open":
		s += " (the default)"
	}
	return s
}

// checkArgs is egress's Args check: with --check, a missing box name is
// bad input (exit 2) like a bad URL.
func checkArgs(cmd *cobra.Command, args []string) error {
	err := exactlyOne("egress", "box name")(cmd, args)
	if err != nil && cmd.Flags().Changed("check") {
		return &ExitError{Code: checkBad, Err: err}
	}
	return err
}

// checkFlagError makes a flag error of egress --check bad input (exit 2).
func checkFlagError(cmd *cobra.Command, err error) error {
	if cmd.Flags().Changed("check") || strings.Contains(err.Error(), "--check") {
		return &ExitError{Code: checkBad, Err: err}
	}
	return err
}

var errLastWithCheck = errors.New("--last goes with the refusals egress shows, not with --check")
