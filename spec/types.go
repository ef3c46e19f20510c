// Package spec reads and validates the files the user owns: boxes.yaml and
// boxes.lock. It never talks to Docker.
package spec

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
)

// State is the declared run state of a box.
type State string

const (
	Running State = "running"
	Stopped State = "stopped"
)

// Config is a parsed, validated boxes.yaml with defaults applied to every box.
type Config struct {
	// Path is the file the config was read from; the lock and .boxes/ live beside it.
	Path    string
	Version int
	// Fleet names this file's boxes on every engine (label boxes.fleet).
	Fleet string
	// FleetImplied is true when boxes.yaml has no fleet: and Fleet is the
	// directory's name; commands warn about it.
	FleetImplied bool
	Defaults     Settings
	// Boxes are sorted by name.
	Boxes []Box
	// Pools are the pools under pools:, by name.
	Pools []Pool
	// Hosts maps a host name to the engine that serves it. The implicit host
	// "" (local) is the engine of the environment (DOCKER_HOST or the default socket).
	Hosts map[string]Host
	// Recipients are age recipients for archives (save); empty means passphrase.
	Recipients []string

	// places are where the network rules of each box and pool are
	// written, by name (RulesAt).
	places map[string]RulePlaces

	// names finds a box by its name at once (Box): a plan and an apply ask
	// for each box's, and a look through every box for each made a fleet
	// of thousands take seconds.
	names atomic.Pointer[boxNames]
}

// boxNames is where each box is in Boxes, the first of a name; made for
// Boxes of that length and first element (WithPools replaces Boxes).
type boxNames struct {
	at    map[string]int
	n     int
	first *Box
}

// Settings are the per-box knobs that defaults: can fill.
type Settings struct {
	CPUs     float64 // 0 means unlimited
	Memory   int64   // bytes; 0 means unlimited
	Executor Executor
	Runtime  string // "" (engine default) or e.g. "runsc"
	Env      map[string]string
	// Egress is where the box's gate lets its agent connect. A box's own
	// egress: replaces the defaults' entirely.
	Egress Egress
	// Private are the exceptions to the private ranges the gate closes
	// whatever Egress says. A box's own private: replaces the defaults'
	// entirely (private: [] keeps none of them).
	Private []Destination
	// Credentials are the headers the gate adds to what it forwards,
	// sorted by name. A box's credential replaces the defaults' one of
	// the same name and inherits the others, as env: does.
	Credentials []Credential
	// DNS are the name servers the box's gate resolves names with; none
	// leaves the resolver to the engine. A box's own dns: replaces the
	// defaults' entirely.
	DNS []netip.Addr
}

// Executor says where a box's Executor port is published on its host, and
// how the executor reaches out.
type Executor struct {
	Bind string // IP address; default 127.0.0.1
	Port int    // fixed host port, or 0 for auto-assigned
	// Door is set when executor: egress: is written (the box's, its
	// pool's or the defaults'): the executor then reaches out only
	// through the box's gate, under Egress and Private, and the gate
	// publishes its port. Unset, the executor has its own network access
	// and publishes its port itself.
	Door bool
	// Egress and Private are the executor's own rules, read as the
	// agent's egress: and private: are; a box's own replaces the
	// defaults' (each key on its own).
	Egress  Egress
	Private []Destination
}

// Box is one declared box, fully resolved (defaults applied).
type Box struct {
	Name  string
	Fleet string // the fleet of the file that declares it
	Host  string // "" is the local engine
	State State
	Settings
	// Restore is an archive path (relative to the config's directory) that seeds the box at create.
	Restore string
	// From is the box, and the snapshot of it (BOX@LABEL), that seeds the
	// box at create, on its engine; "" for none.
	From string
	// Pool is the pool the box is one of, "" for a box declared by name.
	Pool string
	// Line is where the box is declared in boxes.yaml, for messages.
	Line int
	// CPUsAt, MemoryAt and RuntimeAt are where the box's cpus:, memory:
	// and runtime: are written (its own, or the defaults' it inherits),
	// for a plan's messages; zero when not written.
	CPUsAt, MemoryAt, RuntimeAt Pos
}

// Pos is a place in a file, as messages name it: boxes.yaml:7:11.
type Pos struct {
	File      string
	Line, Col int
}

func (p Pos) String() string {
	if p.Line == 0 {
		return ""
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Host is one Docker engine named under hosts:.
type Host struct {
	Name    string
	Docker  string // any DOCKER_HOST form
	Context string // a docker context name
	// TLS is the directory with ca.pem, cert.pem and key.pem for a tcp://
	// engine, absolute or made relative to boxes.yaml's directory.
	TLS string
	// Kubernetes is set for a Kubernetes cluster's namespace (kubernetes:).
	Kubernetes *Kubernetes
}

// Kubernetes is where on a cluster a kubernetes: host's boxes live.
type Kubernetes struct {
	// Context is the kubeconfig context that reaches the cluster.
	Context string
	// Namespace holds the host's boxes; it must exist.
	Namespace string
	// Kubeconfig is the kubeconfig file, absolute or made relative to
	// boxes.yaml's directory; empty follows kubectl's rules (KUBECONFIG,
	// then ~/.kube/config).
	Kubeconfig string
}

// HostKind is the kind of engine a host is: what reaches it, and what a box
// becomes there. Each kind has its connector (workspace.Kinds).
type HostKind string

// HostDocker is a Docker engine: docker: (any DOCKER_HOST form), context:
// (a docker context), or the local engine (DOCKER_HOST, then the default
// socket).
const HostDocker HostKind = "docker"

// HostKubernetes is a namespace of a Kubernetes cluster (kubernetes:),
// where a box is an agent-sandbox Sandbox with its executor and gate.
const HostKubernetes HostKind = "kubernetes"

// Kind is the kind of engine h is.
func (h Host) Kind() HostKind {
	if h.Kubernetes != nil {
		return HostKubernetes
	}
	return HostDocker
}

// Box returns the declared box with that name.
func (c *Config) Box(name string) (Box, bool) {
	ix := c.names.Load()
	if ix == nil || ix.n != len(c.Boxes) || (ix.n > 0 && ix.first != &c.Boxes[0]) {
		ix = &boxNames{at: make(map[string]int, len(c.Boxes)), n: len(c.Boxes)}
		if ix.n > 0 {
			ix.first = &c.Boxes[0]
		}
		for i := len(c.Boxes) - 1; i >= 0; i-- {
			ix.at[c.Boxes[i].Name] = i
		}
		c.names.Store(ix)
	}
	if i, ok := ix.at[name]; ok && c.Boxes[i].Name == name {
		return c.Boxes[i], true
	}
	// A box renamed in place since (a test's) is looked for.
	for _, b := range c.Boxes {
		if b.Name == name {
			return b, true
		}
	}
	return Box{}, false
}

// Destination is one place a box's gate may connect to, as egress:,
// private: and a credential's to: write it: a host name, a wildcard, an IP
// address or an IP range, each with an optional port.
//
// A wildcard "*.github.com" stands for every name under github.com, at any
// depth (api.github.com, a.b.github.com), but not for github.com itself:
// as with a TLS wildcard, the apex is listed on its own when it is meant.
type Destination struct {
	// Host is a lower-case host name, or "*." and one for a wildcard;
	// empty for an address or a range.
	Host string
	// Prefix is valid for an address or a range: an address is a /32 (or
	// /128) prefix. An IPv4 address is never written as IPv6.
	Prefix netip.Prefix
	// Port is 0 for any port.
	Port int
}

// String is the destination's canonical text, which ParseDestination
// reads back to the same Destination: api.github.com:443, *.github.com,
// 10.0.0.0/8:5432, [2001:db8::1]:443.
func (d Destination) String() string {
	var s string
	switch {
	case d.Host != "":
		s = d.Host
	case d.Prefix.IsSingleIP():
		s = d.Prefix.Addr().String()
		if d.Port != 0 && d.Prefix.Addr().Is6() {
			return "[" + s + "]:" + strconv.Itoa(d.Port)
		}
	case d.Prefix.IsValid():
		s = d.Prefix.String()
	}
	if d.Port != 0 {
		s += ":" + strconv.Itoa(d.Port)
	}
	return s
}

// Wildcard reports whether d stands for the sub-domains of a name.
func (d Destination) Wildcard() bool { return strings.HasPrefix(d.Host, "*.") }

// EgressMode is what egress: says in a word.
type EgressMode int

const (
	// EgressOpen lets the agent reach any public address (the default).
	EgressOpen EgressMode = iota
	// EgressNone lets it reach nothing outside the box.
	EgressNone
	// EgressList lets it reach only the listed destinations.
	EgressList
)

// String is the mode as a word: open, none or list.
func (m EgressMode) String() string {
	switch m {
	case EgressNone:
		return "none"
	case EgressList:
		return "list"
	}
	return "open"
}

// Egress is where a box's agent may connect, through its gate. Private
// ranges stay closed in every mode but for the box's Private exceptions.
type Egress struct {
	Mode EgressMode
	// Allow are the destinations of EgressList, in the order written.
	Allow []Destination
}

// String is "open", "none", or how many destinations the list has.
func (e Egress) String() string {
	switch e.Mode {
	case EgressNone:
		return "none"
	case EgressList:
		if len(e.Allow) == 1 {
			return "1 destination"
		}
		return fmt.Sprintf("%d destinations", len(e.Allow))
	}
	return "open"
}

// Credential is a header the gate adds to each request it forwards to one
// destination. Its value is read where boxes runs and is never in boxes.yaml.
type Credential struct {
	// Name is lower-case letters, digits and '-', starting with a letter:
	// it names the gate's route for the credential.
	Name string
	// To is a host name or an IP address, with an optional port; never a
	// wildcard or a range.
	To Destination
	// Header is the HTTP header field name, as written.
	Header string
	// Prefix goes before the value, e.g. "Bearer ".
	Prefix string
	// From is where the value is read: "env:NAME", "file:PATH" or
	// "cmd:COMMAND" (what the command prints), as written ("~/" is the
	// home directory; a relative PATH is relative to boxes.yaml's
	// directory, where COMMAND runs too).
	From string
	// CA is "file:PATH", a PEM file of the certificates the destination's
	// own must chain to in place of the system's roots (read as From is);
	// "" for the system's roots. It is no secret.
	CA string
}

// clone is s with its own map and lists, so that changing a box's cannot
// change another's.
func (s Settings) clone() Settings {
	s.Env = maps.Clone(s.Env)
	if s.Env == nil {
		s.Env = map[string]string{}
	}
	s.Egress.Allow = slices.Clone(s.Egress.Allow)
	s.Private = slices.Clone(s.Private)
	s.Credentials = slices.Clone(s.Credentials)
	s.DNS = slices.Clone(s.DNS)
	s.Executor.Egress.Allow = slices.Clone(s.Executor.Egress.Allow)
	s.Executor.Private = slices.Clone(s.Executor.Private)
	return s
}
