package gate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/stripe/smokescreen/pkg/smokescreen"
)

// Refusal is one request the gate refused, printed to its standard output
// as one JSON line.
type Refusal struct {
	Time time.Time `json:"time"`
	// Destination is host:port, as the request named it.
	Destination string `json:"destination"`
	// Rule is one of the Rule… words.
	Rule string `json:"rule"`
	// Reason is a sentence for a person.
	Reason string `json:"reason"`
	// Side is SideExecutor for a request of the executor; "" for the agent's.
	Side string `json:"side,omitempty"`
}

// ParseRefusals reads the refusals among the gate's output lines, skipping
// every line that is not one (a log line, a blank, a line cut short).
func ParseRefusals(r io.Reader) ([]Refusal, error) {
	var out []Refusal
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] == '{' {
			var ref Refusal
			if json.Unmarshal(line, &ref) == nil && ref.Rule != "" && ref.Destination != "" {
				out = append(out, ref)
			}
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// refusalLog writes refusals as JSON lines, one at a time.
type refusalLog struct {
	mu   sync.Mutex
	w    io.Writer
	side string // the Refusal's Side
}

func (l *refusalLog) write(r Refusal) {
	r.Time = time.Now().UTC()
	r.Side = l.side
	line, err := json.Marshal(r)
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.w.Write(append(line, '\n'))
}

// smokescreen's X-Smokescreen-Error and its classifier's reason: what the
// gate reads of a refusal it did not decide itself.
const smokescreenErrorHeader = "X-Smokescreen-Error"

var deniedAddress = regexp.MustCompile(`- (\S+) denied by rule '([^']+)'`)

// refusalOf says why smokescreen answered a proxy request with resp, which
// it builds for every request it does not carry out. It returns false when
// that was no refusal: the destination was allowed and did not answer.
//
// The policy is pure, so asking it again gives the answer smokescreen's ACL
// had; what the policy allowed and smokescreen still refused, it refused
// for the address the name resolved to (its reason names that address and
// its classification) or because the name did not resolve.
func (g *gate) refusalOf(sctx *smokescreen.SmokescreenContext, resp *http.Response) (Refusal, bool) {
	req := resp.Request
	d, err := destinationOf(req)
	if err != nil {
		return Refusal{Destination: sctx.RequestedHost, Rule: RuleNotAllowed, Reason: "the destination cannot be read as host:port"}, true
	}
	if v := g.policy.decide(d, req.Header); !v.allowed {
		return Refusal{Destination: d.String(), Rule: v.rule, Reason: v.reason}, true
	}
	msg := resp.Header.Get(smokescreenErrorHeader)
	if resp.StatusCode == http.StatusProxyAuthRequired {
		reason := ""
		if sctx.Decision != nil {
			reason = sctx.Decision.Reason
		}
		rule, why := g.addressRefusal(d, reason)
		return Refusal{Destination: d.String(), Rule: rule, Reason: why}, true
	}
	// A net.DNSError reads "lookup NAME…"; smokescreen prefixes it with
	// "Failed to resolve remote hostname" or, for a timeout, "Timed out".
	if _, lookup, ok := strings.Cut(msg, ": lookup "); ok {
		return Refusal{Destination: d.String(), Rule: RuleResolveFailed, Reason: fmt.Sprintf("%s did not resolve: lookup %s", d.host, lookup)}, true
	}
	return Refusal{}, false
}

// addressRefusal is the rule and reason of smokescreen's refusal of the
// address d resolved to, from smokescreen's reason.
func (g *gate) addressRefusal(d destination, reason string) (string, string) {
	m := deniedAddress.FindStringSubmatch(reason)
	if m == nil {
		return RulePrivateRange, fmt.Sprintf("%s is not a public address (%s)", d.host, strings.TrimSuffix(strings.TrimSpace(reason), "."))
	}
	a, err := netip.ParseAddr(m[1])
	if err != nil {
		return RulePrivateRange, fmt.Sprintf("%s resolves to %s, which is not a public address", d.host, m[1])
	}
	a = a.Unmap()
	// "db.example resolves to 10.0.0.5, a private address" or, for an
	// address given as the destination, "10.0.0.5 is a private address".
	describe := func(what string) string {
		if d.addr == a {
			return fmt.Sprintf("%s is %s", a, what)
		}
		return fmt.Sprintf("%s resolves to %s, %s", d.host, a, what)
	}
	switch {
	case m[2] == "Deny: Self Connection":
		return RuleClosed, describe("the gate's own address")
	case contains(g.policy.closed, a):
		return RuleClosed, describe("an address of the engine machine or a bridge gateway, which is always closed")
	}
	return RulePrivateRange, describe(addressKind(a) + ": private and local addresses are closed unless listed under private")
}
