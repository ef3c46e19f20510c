package compose

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/hermes-box/boxes/gate"
	"github.com/hermes-box/boxes/spec"
)

// The network door (design section 8): the agent sits only on the box's
// inside network, which has no route out and no address of the engine's
// machine on it; its one way out is the gate, an egress proxy in a container
// of its own on both networks.
const (
	// GateBinary is the gate's program in the image: boxes itself, put
	// there by boxes build.
	GateBinary = "/usr/local/bin/boxes-gate"
	// CredentialsLabel carries, on the gate, a digest of each credential's
	// value, so that a plan can say which value changed without holding it.
	CredentialsLabel = "boxes.credentials"
	// ClosedLabel carries, on the gate, the addresses of the engine's
	// machine it closes (Door.Closed, comma-separated): the machine may
	// gain one after the gate is made, and a plan, doctor and egress read
	// the label from a container list to tell.
	ClosedLabel = "boxes.closed"
	// inhibitIPv4 keeps the engine's machine off the inside network: an
	// internal network alone still answers at its gateway address.
	inhibitIPv4 = "com.docker.network.bridge.inhibit_ipv4"
)

// Door is what a box's gate is made with besides boxes.yaml, read on the
// machine running boxes: the credentials' values and the addresses of the
// engine's machine that stay closed whatever the rules say.
type Door struct {
	// Secrets are the credentials' values by name, prefix included.
	Secrets map[string]string
	// CAs are the PEM certificates of the credentials that name a ca:,
	// by name: what their destinations' certificates must chain to.
	CAs map[string]string
	// Closed are CIDRs of the engine's machine (its public addresses; the
	// private ranges are closed anyway).
	Closed []string
}

// GateURL is the gate's proxy as the agent's tools are told of it.
var GateURL = "http://" + GateService + ":" + strconv.Itoa(gate.ProxyPort)

// proxyEnv points the agent's tools at the gate. NODE_USE_ENV_PROXY makes
// Node's own fetch honour the variables, as curl, git, npm and pip do.
var proxyEnv = map[string]string{
	"HTTP_PROXY":         GateURL,
	"HTTPS_PROXY":        GateURL,
	"http_proxy":         GateURL,
	"https_proxy":        GateURL,
	"NO_PROXY":           noProxy,
	"no_proxy":           noProxy,
	"NODE_USE_ENV_PROXY": "1",
}

const noProxy = ExecutorService + "," + GateService + ",localhost,127.0.0.1"

// GateConfig is the gate's configuration for box b. With redact the
// credentials' values are Redacted, for showing to a person.
func GateConfig(b spec.Box, d Door, redact bool) gate.Config {
	c := gate.Config{Egress: b.Egress.Mode.String(), Closed: append([]string(nil), d.Closed...)}
	if b.Egress.Mode == spec.EgressList {
		c.Allow = rules(b.Egress.Allow)
	}
	c.Private = rules(b.Private)
	c.Executor = executorSide(b)
	sort.Strings(c.Closed)
	for _, cr := range b.Credentials {
		value := d.Secrets[cr.Name]
		if redact {
			value = Redacted
		}
		c.Credentials = append(c.Credentials, gate.Credential{
			Name: cr.Name, Host: destinationHost(cr.To), Port: cr.To.Port, Header: cr.Header, Value: value, CA: d.CAs[cr.Name],
		})
	}
	return c
}

// rules are destinations as the gate reads them, in a stable order so that
// reordering boxes.yaml's list changes nothing.
func rules(ds []spec.Destination) []gate.Rule {
	var out []gate.Rule
	for _, d := range ds {
		out = append(out, GateRule(d))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Host+out[i].CIDR != out[j].Host+out[j].CIDR {
			return out[i].Host+out[i].CIDR < out[j].Host+out[j].CIDR
		}
		return out[i].Port < out[j].Port
	})
	return out
}

// GateRule is destination d as the gate reads it.
func GateRule(d spec.Destination) gate.Rule {
	if d.Prefix.IsValid() {
		return gate.Rule{CIDR: d.Prefix.String(), Port: d.Port}
	}
	return gate.Rule{Host: d.Host, Port: d.Port}
}

func destinationHost(d spec.Destination) string {
	if d.Prefix.IsValid() {
		return d.Prefix.Addr().String()
	}
	return d.Host
}

// gateService is the gate's service: boxes' own binary from the box's image,
// as nobody, with no capability, a read-only root and no volume: it holds
// nothing worth keeping and the agent cannot reach into it.
func gateService(in Input) map[string]any {
	b := in.Box
	cfg := gateJSON(GateConfig(b, in.Door, in.Token == ""))
	keptPort := 0
	if b.Executor.Door {
		keptPort = in.HostPort
	}
	labels := serviceLabels(b, GateService, keptPort)
	labels[CredentialsLabel] = credentialDigests(b, in.Door)
	labels[ClosedLabel] = closedLabel(in.Door)
	s := map[string]any{
		"hostname":     GateService,
		"image":        in.Image,
		"pull_policy":  types.PullPolicyNever,
		"entrypoint":   []any{GateBinary, "gate"},
		"user":         "65534:65534",
		"read_only":    true,
		"cap_drop":     []any{"ALL"},
		"security_opt": []any{"no-new-privileges:true"},
		"init":         true,
		"restart":      types.RestartPolicyUnlessStopped,
		"sysctls":      map[string]any{"net.ipv6.conf.all.disable_ipv6": "1"},
		"labels":       labels,
		"environment":  map[string]any{gate.ConfigVar: cfg, boxNameVar: b.Name},
		"healthcheck": map[string]any{
			"test":         []any{"CMD", GateBinary, "gate", "--health"},
			"interval":     "10s",
			"timeout":      "5s",
			"retries":      3,
			"start_period": "30s",
		},
		"networks":          map[string]any{Network: nil, InsideNetwork: nil},
		"stop_grace_period": "2s",
	}
	if b.Executor.Door {
		gateExecutorSide(s, b, in.HostPort)
	}
	if len(b.DNS) > 0 {
		var dns []any
		for _, a := range b.DNS {
			dns = append(dns, a.String())
		}
		s["dns"] = dns
	}
	return s
}

// closedLabel is the ClosedLabel value: d's closed addresses, sorted.
func closedLabel(d Door) string {
	return strings.Join(slices.Sorted(slices.Values(d.Closed)), ",")
}

// CADigest is the CredentialsLabel key of the digest of credential name's
// CA, beside that of its value: "/" is in no credential's name.
func CADigest(name string) string { return name + "/ca" }

// credentialDigests is the CredentialsLabel value: name → the first 12 hex
// digits of the value's SHA-256, and CADigest(name) → its CA's for a
// credential with a ca:, as compact JSON with sorted keys.
func credentialDigests(b spec.Box, d Door) string {
	m := map[string]string{}
	for _, c := range b.Credentials {
		sum := sha256.Sum256([]byte(d.Secrets[c.Name]))
		m[c.Name] = hex.EncodeToString(sum[:6])
		if c.CA != "" {
			sum := sha256.Sum256([]byte(d.CAs[c.Name]))
			m[CADigest(c.Name)] = hex.EncodeToString(sum[:6])
		}
	}
	out, _ := json.Marshal(m) // a map of strings always marshals
	return string(out)
}

// CredentialDigests is what a gate made now from b and d would carry in
// CredentialsLabel, decoded.
func CredentialDigests(b spec.Box, d Door) map[string]string {
	m := map[string]string{}
	_ = json.Unmarshal([]byte(credentialDigests(b, d)), &m)
	return m
}

// insideNetwork is the inside network's model: internal (no route out) and
// with no address of the engine's machine on its bridge.
func insideNetwork(labels map[string]any) map[string]any {
	return map[string]any{
		"internal":    true,
		"driver_opts": map[string]any{inhibitIPv4: "true"},
		"labels":      labels,
	}
}

// redactGate replaces the credentials' values in a gate's environment.
func redactGate(env types.MappingWithEquals) types.MappingWithEquals {
	v, ok := env[gate.ConfigVar]
	if !ok || v == nil {
		return env
	}
	var c gate.Config
	if json.Unmarshal([]byte(*v), &c) != nil {
		return env
	}
	for i := range c.Credentials {
		c.Credentials[i].Value = Redacted
	}
	env = maps.Clone(env)
	env[gate.ConfigVar] = new(gateJSON(c))
	return env
}

// gateJSON is the gate's configuration as its environment carries it:
// compact, and with < and > as they are (Redacted reads as written).
func gateJSON(c gate.Config) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(c) // plain data always encodes
	return strings.TrimSuffix(buf.String(), "\n")
}

// MachineAddresses are the CIDRs of addrs (a machine's addresses) that the
// private ranges do not already close: its public ones, as /32 or /128.
func MachineAddresses(addrs []netip.Addr) []string {
	var out []string
	for _, a := range addrs {
		a = a.Unmap()
		if !a.IsGlobalUnicast() || a.IsPrivate() {
			continue
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()).String())
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// MachineClosed compares the addresses of the engine's machine that a gate
// closes, as its labels say, with those it has now (MachineAddresses):
// open are the ones the gate leaves open, gone the ones it closes that the
// machine no longer has. known is false for a gate that does not say (made
// by an earlier boxes): what it closes cannot be told from a list.
func MachineClosed(labels map[string]string, now []string) (open, gone []string, known bool) {
	v, known := labels[ClosedLabel]
	if !known {
		return nil, nil, false
	}
	var closed []string
	if v != "" {
		closed = strings.Split(v, ",")
	}
	for _, a := range now {
		if !slices.Contains(closed, a) {
			open = append(open, a)
		}
	}
	for _, a := range closed {
		if !slices.Contains(now, a) {
			gone = append(gone, a)
		}
	}
	return open, gone, true
}

// Addresses are CIDRs of single addresses (MachineAddresses, ClosedLabel)
// as a person reads them: 198.51.100.77, not 198.51.100.77/32.
func Addresses(cidrs []string) string {
	out := make([]string, len(cidrs))
	for i, c := range cidrs {
		if p, err := netip.ParsePrefix(c); err == nil && p.IsSingleIP() {
			c = p.Addr().String()
		}
		out[i] = c
	}
	return strings.Join(out, ", ")
}

// IsGateKey reports whether settings field k shapes only the gate.
func IsGateKey(k string) bool {
	return k == "egress" || k == "private" || k == "dns" || strings.HasPrefix(k, "credentials.") ||
		k == ExecutorEgressKey || k == ExecutorPrivateKey
}
