package gate

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	acl "github.com/stripe/smokescreen/pkg/smokescreen/acl/v1"
	"github.com/stripe/smokescreen/pkg/smokescreen/hostport"
)

// The rules of refusals: short words a program can branch on.
const (
	RuleNotAllowed    = "not-allowed"    // not a destination of the box's egress
	RuleNone          = "none"           // the box's egress is none
	RulePrivateRange  = "private-range"  // a private or local address not listed under private
	RuleClosed        = "closed"         // an address closed whatever the rules say
	RuleUpstreamProxy = "upstream-proxy" // the request names a further proxy
	RuleResolveFailed = "resolve-failed" // the name did not resolve
	RuleUntrusted     = "untrusted"      // a credential's destination's certificate did not verify
)

// upstreamProxyHeader is how a client asks smokescreen (and goproxy) to
// chain its CONNECT through a proxy of the client's choosing.
const upstreamProxyHeader = "X-Upstream-Https-Proxy"

// destination is where a request through the proxy goes.
type destination struct {
	host string     // normalized as rule.host
	port int        //
	addr netip.Addr // valid when host is an address
}

func (d destination) String() string { return hostport.HostPort{Host: d.host, Port: d.port}.String() }

// destinationOf reads a proxy request's destination the way smokescreen
// does (so that the gate and smokescreen decide about the same place):
// a CONNECT's authority, or the host of an absolute URI with the scheme's
// default port.
func destinationOf(req *http.Request) (destination, error) {
	var hp hostport.HostPort
	var err error
	if req.Method == http.MethodConnect {
		hp, err = hostport.New(req.Host, false)
	} else {
		hp, err = hostport.NewWithScheme(req.Host, req.URL.Scheme, false)
	}
	if err != nil {
		return destination{}, err
	}
	d := destination{host: strings.TrimSuffix(hp.Host, "."), port: hp.Port}
	if a, err := netip.ParseAddr(d.host); err == nil {
		d.addr = a.Unmap()
	}
	return d, nil
}

// matches reports whether r names d: a host rule by name (exactly, or any
// name under a wildcard's domain), a range rule by address; and the port
// when the rule has one.
func (r rule) matches(d destination) bool {
	if r.port != 0 && r.port != d.port {
		return false
	}
	if r.host == "" {
		return d.addr.IsValid() && r.prefix.Contains(d.addr)
	}
	if r.wildcard {
		return strings.HasSuffix(d.host, "."+r.host)
	}
	return d.host == r.host
}

// firstMatch is the first of rules that names d.
func firstMatch(rules []rule, d destination) (rule, bool) {
	for _, r := range rules {
		if r.matches(d) {
			return r, true
		}
	}
	return rule{}, false
}

// privateName reports whether d is a name listed under private: one that
// may resolve to a private address.
func (c *compiled) privateName(d destination) bool {
	for _, r := range c.private {
		if r.host != "" && r.matches(d) {
			return true
		}
	}
	return false
}

// credentialFor is the credential whose destination is d.
func (c *compiled) credentialFor(d destination) (credential, bool) {
	for _, cred := range c.credentials {
		if cred.host == d.host && cred.port == d.port {
			return cred, true
		}
	}
	return credential{}, false
}

// verdict is the policy's answer about one destination: allowed by an
// entry of the Config, or refused by a rule for a reason.
type verdict struct {
	allowed bool
	by      Match // what allows it
	rule    string
	reason  string
}

// What of a Config allows a destination: Match.Setting.
const (
	ByCredential = "credential" // a credential's destination
	ByPrivate    = "private"    // a Private rule
	ByEgress     = "egress"     // an Allow rule of EgressList
	ByOpen       = "open"       // EgressOpen
)

// Match is the entry of a Config that allows a destination.
type Match struct {
	// Setting is ByCredential, ByPrivate, ByEgress or ByOpen.
	Setting string
	// Rule is the Private or Allow rule, as the Config gives it.
	Rule Rule
	// Credential is the credential's name.
	Credential string
}

// decide is the gate's destination policy, before any name is resolved:
// the addresses a destination resolves to are smokescreen's to check, at
// connect time. header is the request's.
func (c *compiled) decide(d destination, header http.Header) verdict {
	if len(header.Values(upstreamProxyHeader)) > 0 {
		return verdict{rule: RuleUpstreamProxy, reason: fmt.Sprintf("the request names a further proxy (%s); the gate is the box's last hop", upstreamProxyHeader)}
	}
	if d.addr.Is6() {
		// smokescreen takes no IPv6 literal as a destination; say so here
		// rather than let it refuse with a reason of its own.
		return verdict{rule: RuleNotAllowed, reason: fmt.Sprintf("%s is an IPv6 address; the gate takes IPv6 destinations by name only", d.host)}
	}
	if cred, ok := c.credentialFor(d); ok {
		return verdict{allowed: true, by: Match{Setting: ByCredential, Credential: cred.Name}, reason: fmt.Sprintf("the destination of credential %q", cred.Name)}
	}
	if r, ok := firstMatch(c.private, d); ok {
		return verdict{allowed: true, by: Match{Setting: ByPrivate, Rule: r.src}, reason: "listed under private"}
	}
	switch c.egress {
	case EgressOpen:
		return verdict{allowed: true, by: Match{Setting: ByOpen}, reason: "egress is open"}
	case EgressList:
		if r, ok := firstMatch(c.allow, d); ok {
			return verdict{allowed: true, by: Match{Setting: ByEgress, Rule: r.src}, reason: "listed under egress"}
		}
		return verdict{rule: RuleNotAllowed, reason: fmt.Sprintf("%s is not a destination listed under %s egress", d, c.whose())}
	}
	if c.side == SideExecutor {
		return verdict{rule: RuleNone, reason: "the executor's egress is none: nothing but its private exceptions leaves it"}
	}
	return verdict{rule: RuleNone, reason: "the box's egress is none: nothing but its credentials and private exceptions leaves it"}
}

// whose names the side whose egress the policy is: the box's (the agent's)
// or the executor's.
func (c *compiled) whose() string {
	if c.side == SideExecutor {
		return "the executor's"
	}
	return "the box's"
}

// decider is the policy as smokescreen's ACL.
type decider struct{ policy *compiled }

func (a decider) Decide(args acl.DecideArgs) (acl.Decision, error) {
	d, err := destinationOf(args.Req)
	if err != nil {
		return acl.Decision{Result: acl.Deny, Reason: "the destination cannot be read"}, nil
	}
	v := a.policy.decide(d, args.Req.Header)
	if !v.allowed {
		return acl.Decision{Result: acl.Deny, Reason: v.reason}, nil
	}
	return acl.Decision{Result: acl.Allow, Reason: v.reason}, nil
}
