package spec

import (
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

var (
	// A credential's name is a path segment of the gate's route for it.
	credentialNamePattern = lazyRegexp(`^[a-z][a-z0-9-]{0,62}$`)
	// headerNamePattern is an RFC 7230 token.
	headerNamePattern = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// credentialKeys are the keys of one credential. value: is not among them:
// it is refused with a message of its own.
var credentialKeys = []string{"to", "header", "prefix", "from", "ca"}

// headersRefused frame or route a request: the gate sets them itself, so a
// credential that set them would break the request or send it elsewhere.
var headersRefused = []string{"Host", "Content-Length", "Transfer-Encoding", "Connection"}

const credentialHint = `e.g. anthropic: {to: api.anthropic.com, header: x-api-key, from: "env:ANTHROPIC_API_KEY"}`

// credentials reads credentials: into s, over the ones s has: a credential
// of the same name is replaced whole, the others are kept.
func (p *parser) credentials(box string, n *yaml.Node, s *Settings) {
	if !p.kind(n, yaml.MappingNode, "a mapping of credential names") {
		return
	}
	byName := map[string]Credential{}
	for _, c := range s.Credentials {
		byName[c.Name] = c
	}
	for name, e := range p.mapping(n, nil) {
		if c, ok := p.credential(name, e); ok {
			byName[name] = c
			p.wrote(box, "credentials."+name, e.key)
		}
	}
	s.Credentials = make([]Credential, 0, len(byName))
	for _, c := range byName {
		s.Credentials = append(s.Credentials, c)
	}
	sort.Slice(s.Credentials, func(i, j int) bool { return s.Credentials[i].Name < s.Credentials[j].Name })
	p.credentialClashes(box, s.Credentials)
}

// credential reads the credential name: {to:, header:, from:, prefix:}.
// Its messages never quote from: or value:, which may hold a secret.
func (p *parser) credential(name string, e entry) (Credential, bool) {
	c := Credential{Name: name}
	errs := len(p.errs)
	if !credentialNamePattern().MatchString(name) {
		p.errorf(e.key, "a credential name is lower-case letters, digits and '-', starting with a letter (it names the gate's route for it)", "bad credential name %q", name)
	}
	if !p.kind(e.value, yaml.MappingNode, "a mapping with to:, header: and from:") {
		return c, false
	}
	// value: is refused with its reason, not as an unknown key.
	body := *e.value
	body.Content = nil
	for i := 0; i+1 < len(e.value.Content); i += 2 {
		if k := e.value.Content[i]; k.Kind == yaml.ScalarNode && k.Value == "value" {
			p.errorf(k, "read it where boxes runs: from: env:NAME, from: file:PATH or from: cmd:COMMAND", "credential %s: secrets never go in boxes.yaml, so a credential has no value:", name)
			continue
		}
		body.Content = append(body.Content, e.value.Content[i], e.value.Content[i+1])
	}
	fields := p.mapping(&body, credentialKeys)
	var missing []string
	for _, k := range []string{"to", "header", "from"} {
		if _, ok := fields[k]; !ok {
			missing = append(missing, k+":")
		}
	}
	if len(missing) > 0 {
		p.errorf(e.key, credentialHint, "credential %s is missing %s", name, strings.Join(missing, ", "))
	}
	if f, ok := fields["to"]; ok {
		c.To = p.credentialTo(name, f.value)
	}
	if f, ok := fields["header"]; ok {
		c.Header = p.header(name, f.value)
	}
	if f, ok := fields["prefix"]; ok {
		if v, ok := p.str(f.value); ok {
			if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
				p.errorf(f.value, `e.g. prefix: "Bearer "`, "credential %s: prefix holds a control character, which a header cannot carry", name)
			}
			c.Prefix = v
		}
	}
	if f, ok := fields["from"]; ok {
		c.From = p.from(name, f.value)
	}
	if f, ok := fields["ca"]; ok {
		c.CA = p.caFile(name, f.value)
	}
	return c, len(p.errs) == errs
}

// credentialTo reads a credential's to:, one host or address.
func (p *parser) credentialTo(name string, n *yaml.Node) Destination {
	const hint = "name the one host the header goes to, e.g. to: api.github.com or to: 192.0.2.7:8080"
	v, ok := p.str(n)
	if !ok {
		return Destination{}
	}
	d, err := ParseDestination(v)
	switch {
	case err != nil:
		p.destinationError(n, "credential "+name+": to", err)
	case d.Wildcard():
		p.errorf(n, hint, "credential %s: to: %q is a wildcard; a credential goes to one host", name, v)
	case d.Host == "" && !d.Prefix.IsSingleIP():
		p.errorf(n, hint, "credential %s: to: %q is a range; a credential goes to one address", name, v)
	default:
		return d
	}
	return Destination{}
}

// header reads a credential's header:, an HTTP header field name the gate
// does not set itself.
func (p *parser) header(name string, n *yaml.Node) string {
	v, ok := p.str(n)
	if !ok {
		return ""
	}
	if !headerNamePattern.MatchString(v) {
		p.errorf(n, "a header name is letters, digits and !#$%&'*+-.^_`|~, e.g. x-api-key or Authorization", "credential %s: header: %q is not an HTTP header name", name, v)
		return ""
	}
	for _, h := range headersRefused {
		if strings.EqualFold(v, h) {
			p.errorf(n, "a credential sets a header such as Authorization or x-api-key", "credential %s cannot set %s: the gate sets it for each request", name, v)
			return ""
		}
	}
	return v
}

// from reads a credential's from:, env:NAME, file:PATH or cmd:COMMAND,
// without quoting it in a message: a secret written there by mistake stays
// out of logs.
func (p *parser) from(name string, n *yaml.Node) string {
	v, ok := p.str(n)
	if !ok {
		return ""
	}
	switch {
	case strings.HasPrefix(v, "env:"):
		if !envNamePattern.MatchString(v[len("env:"):]) {
			p.errorf(n, "a variable name is letters, digits and _, not starting with a digit", "credential %s: from: env: needs an environment variable name", name)
			return ""
		}
	case strings.HasPrefix(v, "file:"):
		path := v[len("file:"):]
		switch {
		case path == "":
			p.errorf(n, "e.g. from: file:~/.config/anthropic/key", "credential %s: from: file: needs a path", name)
			return ""
		case path[0] == '~' && !strings.HasPrefix(path, "~/"):
			p.errorf(n, "write ~/PATH for your home directory, or the full path", "credential %s: from: file: takes ~/ only, not ~user", name)
			return ""
		}
	case strings.HasPrefix(v, "cmd:"):
		command := v[len("cmd:"):]
		switch {
		case strings.TrimSpace(command) == "":
			p.errorf(n, `e.g. from: "cmd:gh auth token", run by sh -c in boxes.yaml's directory`, "credential %s: from: cmd: needs a command", name)
			return ""
		case strings.ContainsFunc(command, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }):
			p.errorf(n, `put a longer script in a file and run that: from: "cmd:sh ./token.sh"`, "credential %s: from: cmd: is one line, with no control character", name)
			return ""
		}
	default:
		p.errorf(n, "from: env:NAME reads an environment variable, from: file:PATH a file, from: cmd:COMMAND a command's output, on the machine running boxes",
			"credential %s: from: is env:NAME, file:PATH or cmd:COMMAND; the value itself never goes in boxes.yaml", name)
		return ""
	}
	return v
}

// caFile reads a credential's ca:, file:PATH: the PEM certificates its
// destination's certificate must chain to, in place of the system's roots.
func (p *parser) caFile(name string, n *yaml.Node) string {
	const hint = "ca: file:PATH names a PEM file of the certificates the destination's must chain to, e.g. ca: file:~/.config/corp/ca.pem"
	v, ok := p.str(n)
	if !ok {
		return ""
	}
	path, isFile := strings.CutPrefix(v, "file:")
	switch {
	case !isFile:
		p.errorf(n, hint, "credential %s: ca: is file:PATH, not %q", name, v)
	case path == "":
		p.errorf(n, hint, "credential %s: ca: file: needs a path", name)
	case path[0] == '~' && !strings.HasPrefix(path, "~/"):
		p.errorf(n, "write ~/PATH for your home directory, or the full path", "credential %s: ca: file: takes ~/ only, not ~user", name)
	default:
		return v
	}
	return ""
}

// credentialClashes reports two credentials of box (or of defaults: box
// "") that set one header on one destination, at the later one of the
// box's own. A clash between two the box inherits is the defaults'.
func (p *parser) credentialClashes(box string, creds []Credential) {
	at := func(c Credential) (*yaml.Node, bool) {
		if n := p.at[box]["credentials."+c.Name]; n != nil {
			return n, true
		}
		return p.at[""]["credentials."+c.Name], false
	}
	for i, a := range creds {
		for _, b := range creds[:i] {
			if !sameTarget(a.To, b.To) || !strings.EqualFold(a.Header, b.Header) {
				continue
			}
			an, aOwn := at(a)
			bn, bOwn := at(b)
			if !aOwn && !bOwn || an == nil || bn == nil {
				continue
			}
			this, thisAt, other, otherAt := a, an, b, bn
			if !aOwn || bOwn && bn.Line > an.Line {
				this, thisAt, other, otherAt = b, bn, a, an
			}
			p.errorf(thisAt, "one value per header and destination: remove one of them",
				"credential %s sets header %s on %s, as credential %s (line %d) does", this.Name, this.Header, this.To, other.Name, otherAt.Line)
		}
	}
}

// sameTarget reports whether a request can go to both a and b: the same
// host or address, on the same port or on any.
func sameTarget(a, b Destination) bool {
	return a.Host == b.Host && a.Prefix == b.Prefix && (a.Port == 0 || b.Port == 0 || a.Port == b.Port)
}
