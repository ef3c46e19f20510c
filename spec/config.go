package spec

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"filippo.io/age"
	"gopkg.in/yaml.v3"
)

// Limits of env: what the kernel lets a process start with. A container
// whose variables exceed them never starts ("argument list too long") and
// Docker restarts it for ever.
const (
	// MaxEnvString is MAX_ARG_STRLEN (32 pages): one NAME=value with its NUL.
	MaxEnvString = 128 << 10
	// MaxEnvTotal is half of the 2 MiB that the usual 8 MiB stack leaves
	// for arguments and environment together (ARG_MAX), the rest kept for
	// the variables boxes sets and the entrypoint's arguments.
	MaxEnvTotal = 1 << 20
)

// Bounds of the numbers boxes.yaml hands the engine, checked offline. A plan
// checks cpus and memory against the host too: the engine refuses more CPUs
// than its machine has, and a box cannot use more memory than it has.
const (
	// MinCPUs is the least the kernel's CPU bandwidth control takes: a
	// quota of 1 ms per 100 ms period. Docker leaves the check to the
	// kernel, which refuses it only when the container starts.
	MinCPUs = 0.01
	// MaxCPUs is the most CPUs a Linux kernel runs (NR_CPUS is at most
	// 8192): no host can give a box more.
	MaxCPUs = 8192
	// MinMemory is the least memory limit Docker accepts ("Minimum memory
	// limit allowed is 6MB").
	MinMemory = 6 << 20
	// MaxMemory is 4 PiB, all that a machine with 52-bit physical
	// addresses (x86-64, arm64) can have.
	MaxMemory     = 1 << 52
	maxMemoryText = "4 PiB"
)

// FormatBytes is n as people read it: 512 B, 128 KiB, 5.0 MiB.
func FormatBytes(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		if n%(1<<10) == 0 {
			return fmt.Sprintf("%d KiB", n>>10)
		}
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// lazyRegexp is expr compiled on first use. A pattern of bounded length
// ({0,62}) compiles to a long program, tens of microseconds each: compiled
// when the package is initialised, every command, boxes version included,
// would pay for the patterns of files it never reads.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// DefaultBind is where a box's Executor is published unless boxes.yaml says otherwise.
const DefaultBind = "127.0.0.1"

var (
	boxNamePattern   = lazyRegexp(`^[a-z][a-z0-9-]{0,30}$`)
	fleetNamePattern = lazyRegexp(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)
	// namespacePattern is a Kubernetes namespace: an RFC 1123 label.
	namespacePattern = lazyRegexp(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	envNamePattern   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	sizePattern      = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)$`)
)

// Keys accepted at each level; the JSON Schema is built from the same lists.
var (
	topKeys      = []string{"version", "fleet", "defaults", "boxes", "pools", "hosts", "archive"}
	settingKeys  = []string{"cpus", "memory", "executor", "runtime", "env", "egress", "private", "credentials", "dns"}
	boxKeys      = append([]string{"state", "restore", "from", "host"}, settingKeys...)
	executorKeys = []string{"bind", "port", "egress", "private"}
	hostKeys     = []string{"docker", "context", "tls", "kubernetes"}
	kubeKeys     = []string{"context", "namespace", "kubeconfig"}
	archiveKeys  = []string{"recipients"}
)

// Load reads and validates the boxes.yaml at path.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

type parser struct {
	file string
	errs Errors
	// at holds where each setting's value is written, by box ("" for
	// defaults) and key ("cpus", "executor.port"), so that a message
	// about it (a port clash, a plan's host limit) points at the value.
	at map[string]map[string]*yaml.Node
	// badRules are the boxes (and defaults, "") whose egress: or private:
	// was refused.
	badRules map[string]bool
}

// wrote records that box's setting key is written at n.
func (p *parser) wrote(box, key string, n *yaml.Node) {
	if p.at == nil {
		p.at = map[string]map[string]*yaml.Node{}
	}
	if p.at[box] == nil {
		p.at[box] = map[string]*yaml.Node{}
	}
	p.at[box][key] = n
}

// where is the position of box's setting key: the box's own value, else
// the defaults' it inherits; zero when neither is written.
func (p *parser) where(box, key string) Pos {
	n := p.at[box][key]
	if n == nil {
		n = p.at[""][key]
	}
	if n == nil {
		return Pos{}
	}
	return Pos{File: p.file, Line: n.Line, Col: n.Column}
}

func (p *parser) errorf(n *yaml.Node, hint, format string, args ...any) {
	line, col := 1, 1
	if n != nil && n.Line > 0 {
		line, col = n.Line, n.Column
	}
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Col: col, Msg: fmt.Sprintf(format, args...), Hint: hint})
}

// Parse validates boxes.yaml content. It reports every problem it finds, as Errors.
func Parse(path string, data []byte) (*Config, error) {
	p := &parser{file: path}
	if len(bytes.TrimSpace(data)) == 0 {
		p.errorf(nil, "run boxes init to write a starter file", "%s is empty", displayName(path))
		return nil, p.errs
	}
	doc, ok := p.document(data)
	if !ok {
		return nil, p.errs
	}
	// A document of nothing but a "---" (or comments) is empty too; its null
	// node sits on a line after the file's last one.
	if len(doc.Content) == 0 || (doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Tag == "!!null" && doc.Content[0].Value == "") {
		p.errorf(nil, "run boxes init to write a starter file", "%s is empty", displayName(path))
		return nil, p.errs
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		p.errorf(root, "", "the top level must be a mapping with version: and boxes:")
		return nil, p.errs
	}
	cfg := &Config{Path: path, Hosts: map[string]Host{}}
	top := p.mapping(root, topKeys)

	p.version(cfg, top, root)
	p.fleet(cfg, top, path)
	defaults := Settings{Executor: Executor{Bind: DefaultBind}}
	var defaultsSet fieldSet
	if d, ok := top["defaults"]; ok {
		defaultsSet = p.settings(d.value, &defaults, settingKeys)
	}
	cfg.Defaults = defaults
	if h, ok := top["hosts"]; ok && p.kind(h.value, yaml.MappingNode, "a mapping of host names") {
		p.hosts(cfg, h.value, path)
	}
	if a, ok := top["archive"]; ok && p.kind(a.value, yaml.MappingNode, "a mapping") {
		p.archive(cfg, a.value)
	}
	if b, ok := top["boxes"]; ok && b.value.Tag != "!!null" {
		if p.kind(b.value, yaml.MappingNode, "a mapping of box names") {
			for name, e := range p.mapping(b.value, nil) {
				if box, ok := p.box(name, e, defaults, defaultsSet, cfg); ok {
					cfg.Boxes = append(cfg.Boxes, box)
				}
			}
		}
	}
	sort.Slice(cfg.Boxes, func(i, j int) bool { return cfg.Boxes[i].Name < cfg.Boxes[j].Name })
	if n, ok := top["pools"]; ok {
		p.pools(cfg, n.value, defaults)
	}
	for i := range cfg.Boxes {
		cfg.Boxes[i].Fleet = cfg.Fleet
	}
	p.portClashes(cfg, top)
	p.closedEgress(cfg)
	p.forks(cfg)
	p.rulePlaces(cfg)

	if len(p.errs) > 0 {
		return nil, p.errs.sorted()
	}
	return cfg, nil
}

// version reads the top-level version:, which must be 1.
func (p *parser) version(cfg *Config, top map[string]entry, root *yaml.Node) {
	v, ok := top["version"]
	if !ok {
		p.errorf(root, "add version: 1 at the top", "missing version")
		return
	}
	if n, ok := p.int(v.value); ok {
		if n != 1 {
			p.errorf(v.value, "this boxes understands version: 1", "unsupported version %d", n)
		}
		cfg.Version = n
	}
}

// fleet reads fleet:, else names the fleet after the directory of the file
// at path.
func (p *parser) fleet(cfg *Config, top map[string]entry, path string) {
	f, ok := top["fleet"]
	if !ok {
		cfg.Fleet, cfg.FleetImplied = FleetFromDir(path), true
		return
	}
	if v, ok := p.str(f.value); ok {
		if fleetNamePattern().MatchString(v) {
			cfg.Fleet = v
		} else {
			p.errorf(f.value, "a fleet name is letters, digits, '.', '_' and '-', up to 63 of them, starting with a letter or digit", "bad fleet name %q", v)
		}
	}
}

// archive reads the archive: mapping n: the age recipients of saves.
func (p *parser) archive(cfg *Config, n *yaml.Node) {
	fields := p.mapping(n, archiveKeys)
	r, ok := fields["recipients"]
	if !ok || !p.kind(r.value, yaml.SequenceNode, "a list of age recipients") {
		return
	}
	for _, item := range r.value.Content {
		if s, ok := p.str(item); ok {
			if _, err := age.ParseX25519Recipient(s); err != nil {
				p.errorf(item, "age-keygen -y KEYFILE prints a key's recipient", "%q is not an age recipient (age1…)", s)
				continue
			}
			cfg.Recipients = append(cfg.Recipients, s)
		}
	}
}

// FleetFromDir is the fleet of a boxes.yaml without fleet: the name of its
// directory, made into a valid fleet name.
func FleetFromDir(path string) string {
	dir := filepath.Dir(path)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '-'
	}, filepath.Base(dir))
	name = strings.TrimLeft(name, "._-")
	if len(name) > 63 {
		name = name[:63]
	}
	if name == "" {
		return "default"
	}
	return name
}

func displayName(path string) string {
	if i := strings.LastIndex(path, "/"); i >= 0 {
		return path[i+1:]
	}
	return path
}

type entry struct {
	key, value *yaml.Node
}

// mapping returns the key → entry of a mapping node, reporting duplicate keys
// (which yaml.v3's node API accepts) and, when known is non-nil, unknown keys.
func (p *parser) mapping(n *yaml.Node, known []string) map[string]entry {
	out := map[string]entry{}
	if n.Kind != yaml.MappingNode {
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			p.errorf(k, "", "keys must be plain names")
			continue
		}
		if first, dup := out[k.Value]; dup {
			p.errorf(k, "remove one of them", "duplicate key %q (first at line %d)", k.Value, first.key.Line)
			continue
		}
		if known != nil && !contains(known, k.Value) {
			hint := "known keys: " + strings.Join(known, ", ")
			if s := suggest(k.Value, known); s != "" {
				hint = fmt.Sprintf("did you mean %q?", s)
			}
			p.errorf(k, hint, "unknown key %q", k.Value)
			continue
		}
		out[k.Value] = entry{key: k, value: v}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (p *parser) kind(n *yaml.Node, want yaml.Kind, what string) bool {
	if n.Kind == want {
		return true
	}
	p.errorf(n, "", "expected %s, found %s", what, describe(n))
	return false
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.Tag == "!!null" {
		return "nothing"
	}
	return fmt.Sprintf("%q", n.Value)
}

func (p *parser) str(n *yaml.Node) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.errorf(n, "", "expected a string, found %s", describe(n))
		return "", false
	}
	return n.Value, true
}

// number reads a YAML number (an integer in any of YAML's forms, or a
// float). A plain scalar too big for a float64, which YAML reads as a
// string, is a number too: an infinite one.
func number(n *yaml.Node) (float64, bool) {
	if n.Kind != yaml.ScalarNode {
		return 0, false
	}
	switch n.Tag {
	case "!!int", "!!float":
		var v float64
		return v, n.Decode(&v) == nil
	case "!!str":
		v, err := strconv.ParseFloat(n.Value, 64)
		return v, n.Style == 0 && errors.Is(err, strconv.ErrRange)
	}
	return 0, false
}

func (p *parser) int(n *yaml.Node) (int, bool) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!int" {
		if v, err := strconv.Atoi(n.Value); err == nil {
			return v, true
		}
	}
	p.errorf(n, "", "expected a whole number, found %s", describe(n))
	return 0, false
}

// fieldSet records which settings a mapping set explicitly.
type fieldSet map[string]bool

func (p *parser) settings(n *yaml.Node, s *Settings, known []string) fieldSet {
	return p.settingsOf("", n, s, known)
}

// settingsOf parses the settings of box (or of defaults: box ""), recording
// where its executor port is written.
func (p *parser) settingsOf(box string, n *yaml.Node, s *Settings, known []string) fieldSet {
	set := fieldSet{}
	if !p.kind(n, yaml.MappingNode, "a mapping") {
		return set
	}
	fields := p.mapping(n, known)
	if f, ok := fields["cpus"]; ok {
		p.wrote(box, "cpus", f.value)
		const hint = "e.g. cpus: 2 or cpus: 0.5; a plan also checks it against the host's CPUs"
		if v, ok := number(f.value); !ok {
			p.errorf(f.value, hint, "cpus must be a positive number, found %s", describe(f.value))
		} else if !(v >= MinCPUs && v <= MaxCPUs) { // NaN too
			p.errorf(f.value, hint, "cpus must be a positive number from %v to %v, not %s", MinCPUs, MaxCPUs, f.value.Value)
		} else {
			s.CPUs = v
		}
		set["cpus"] = true
	}
	if f, ok := fields["memory"]; ok {
		p.wrote(box, "memory", f.value)
		const hint = "e.g. memory: 4GiB, 512MiB or 8g"
		v, err := ParseSize(f.value.Value)
		switch {
		case err != nil || f.value.Kind != yaml.ScalarNode:
			p.errorf(f.value, hint, "bad size %s", describe(f.value))
		case v < MinMemory:
			p.errorf(f.value, hint, "memory %s is less than %s, the least Docker accepts", f.value.Value, FormatBytes(MinMemory))
		case v > MaxMemory:
			p.errorf(f.value, hint, "memory %s is more than %s, more than any machine can address", f.value.Value, maxMemoryText)
		default:
			s.Memory = v
		}
		set["memory"] = true
	}
	if f, ok := fields["runtime"]; ok {
		p.wrote(box, "runtime", f.value)
		s.Runtime, _ = p.str(f.value)
		set["runtime"] = true
	}
	if f, ok := fields["executor"]; ok && p.kind(f.value, yaml.MappingNode, "a mapping with bind:, port:, egress: and private:") {
		p.executor(box, f.value, s, set)
	}
	if f, ok := fields["env"]; ok && p.kind(f.value, yaml.MappingNode, "a mapping of variable names to values") {
		p.env(f, s)
	}
	p.network(box, fields, s, set)
	return set
}

// executor parses box's executor: mapping (bind:, port:) into s.
func (p *parser) executor(box string, n *yaml.Node, s *Settings, set fieldSet) {
	ef := p.mapping(n, executorKeys)
	if b, ok := ef["bind"]; ok {
		if v, ok := p.str(b.value); ok {
			if _, err := netip.ParseAddr(v); err != nil {
				p.errorf(b.value, "e.g. bind: 127.0.0.1 or bind: 0.0.0.0", "bind must be an IP address, not %q", v)
			} else {
				s.Executor.Bind = v
			}
		}
		set["executor.bind"] = true
	}
	if pt, ok := ef["port"]; ok {
		p.wrote(box, "executor.port", pt.value)
		switch {
		case pt.value.Kind == yaml.ScalarNode && pt.value.Value == "auto":
			s.Executor.Port = 0
		case pt.value.Kind == yaml.ScalarNode && pt.value.Tag == "!!int":
			v, err := strconv.Atoi(pt.value.Value)
			if err != nil || v < 1 || v > 65535 {
				p.errorf(pt.value, "use a port from 1 to 65535, or auto", "port %s is out of range", pt.value.Value)
			} else {
				s.Executor.Port = v
			}
		default:
			p.errorf(pt.value, "use a port from 1 to 65535, or auto", "port must be a number or auto, found %s", describe(pt.value))
		}
		set["executor.port"] = true
	}
	p.executorDoor(box, ef, s)
}

// env parses an env: entry f into s.Env, on top of what s has (the
// defaults'), checking each name and value and the total against the
// kernel's limits.
func (p *parser) env(f entry, s *Settings) {
	env := map[string]string{}
	for k, v := range s.Env {
		env[k] = v
	}
	for name, e := range p.mapping(f.value, nil) {
		if !envNamePattern.MatchString(name) {
			p.errorf(e.key, "names are letters, digits and _, not starting with a digit", "bad environment variable name %q", name)
			continue
		}
		if e.value.Kind != yaml.ScalarNode {
			p.errorf(e.value, "quote it to pass it as a string", "env %s must be a scalar, found %s", name, describe(e.value))
			continue
		}
		if n := len(name) + 1 + len(e.value.Value) + 1; n > MaxEnvString {
			p.errorf(e.value, "pass big data as a file in the box (boxes exec NAME -- …) rather than in env:",
				"env %s is %s; Linux cannot start a process with a variable over %s (NAME=value, MAX_ARG_STRLEN)", name, FormatBytes(int64(n)), FormatBytes(MaxEnvString))
			continue
		}
		env[name] = e.value.Value
	}
	total := 0
	for k, v := range env {
		total += len(k) + 1 + len(v) + 1 + 8 // the string and its pointer
	}
	if total > MaxEnvTotal {
		p.errorf(f.key, "pass big data as a file in the box rather than in env:",
			"env: totals %s; boxes allows %s so that the box's own variables and arguments still fit the kernel's limit", FormatBytes(int64(total)), FormatBytes(MaxEnvTotal))
	}
	s.Env = env
}

func (p *parser) box(name string, e entry, defaults Settings, _ fieldSet, cfg *Config) (Box, bool) {
	ok := true
	if !boxNamePattern().MatchString(name) {
		p.errorf(e.key, "a box name is a lowercase DNS label: a letter, then up to 30 letters, digits or dashes (so hbl-NAME is a valid compose project name)", "bad box name %q", name)
		ok = false
	}
	// Each box owns its lists: one box's cannot change another's.
	b := Box{Name: name, State: Running, Settings: defaults.clone(), Line: e.key.Line}
	if e.value.Tag == "!!null" {
		return b, ok
	}
	if !p.kind(e.value, yaml.MappingNode, "a mapping of box settings") {
		return b, false
	}
	p.settingsOf(name, e.value, &b.Settings, boxKeys)
	b.CPUsAt, b.MemoryAt, b.RuntimeAt = p.where(name, "cpus"), p.where(name, "memory"), p.where(name, "runtime")
	fields := map[string]entry{}
	for i := 0; i+1 < len(e.value.Content); i += 2 {
		k := e.value.Content[i]
		if _, seen := fields[k.Value]; !seen {
			fields[k.Value] = entry{key: k, value: e.value.Content[i+1]}
		}
	}
	if f, ok2 := fields["state"]; ok2 {
		if v, isStr := p.str(f.value); isStr {
			switch State(v) {
			case Running, Stopped:
				b.State = State(v)
			default:
				p.errorf(f.value, "use running or stopped", "bad state %q", v)
				ok = false
			}
		}
	}
	if f, ok2 := fields["restore"]; ok2 {
		b.Restore, _ = p.str(f.value)
	}
	if f, ok2 := fields["from"]; ok2 && !p.fromOf(&b, f.value) {
		ok = false
	}
	if f, ok2 := fields["host"]; ok2 {
		if v, isStr := p.str(f.value); isStr {
			b.Host = v
			if _, defined := cfg.Hosts[v]; !defined {
				names := make([]string, 0, len(cfg.Hosts))
				for n := range cfg.Hosts {
					names = append(names, n)
				}
				sort.Strings(names)
				hint := "define it under hosts:"
				if len(names) > 0 {
					hint = "defined hosts: " + strings.Join(names, ", ")
				}
				p.errorf(f.value, hint, "host %q is not defined under hosts:", v)
				ok = false
			}
		}
	}
	if !p.executorOnKubernetes(name, b, cfg, e.key) {
		ok = false
	}
	return b, ok
}

// portClashes reports two boxes publishing the same fixed port on one host
// where their bind addresses overlap (a wildcard overlaps every address of
// its family), at the second box's port value (or the defaults' one both
// inherit).
func (p *parser) portClashes(cfg *Config, top map[string]entry) {
	boxesNode := map[string]*yaml.Node{}
	if b, ok := top["boxes"]; ok && b.value.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(b.value.Content); i += 2 {
			boxesNode[b.value.Content[i].Value] = b.value.Content[i]
		}
	}
	// Only boxes on one host with one fixed port can clash: each box is
	// checked against those before it, by host and port.
	type hostPort struct {
		host string
		port int
	}
	before := map[hostPort][]Box{}
	for _, a := range cfg.Boxes {
		if a.Executor.Port == 0 {
			continue
		}
		key := hostPort{a.Host, a.Executor.Port}
		earlier := before[key]
		before[key] = append(earlier, a)
		for _, b := range earlier {
			if !bindsOverlap(a.Executor.Bind, b.Executor.Bind) {
				continue
			}
			at := p.at[a.Name]["executor.port"]
			if at == nil {
				at = p.at[""]["executor.port"]
			}
			if at == nil {
				at = boxesNode[a.Name]
			}
			p.errorf(at, "give one of them another port, or port: auto",
				"box %s publishes executor port %d on %s, which box %s (line %d) already uses", a.Name, a.Executor.Port, a.Executor.Bind, b.Name, b.Line)
		}
	}
}

func bindsOverlap(a, b string) bool {
	if a == b {
		return true
	}
	x, err1 := netip.ParseAddr(a)
	y, err2 := netip.ParseAddr(b)
	if err1 != nil || err2 != nil || x.Is4() != y.Is4() {
		return false
	}
	return x.IsUnspecified() || y.IsUnspecified()
}

var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "kib": 1 << 10, "kb": 1000,
	"m": 1 << 20, "mib": 1 << 20, "mb": 1000 * 1000,
	"g": 1 << 30, "gib": 1 << 30, "gb": 1000 * 1000 * 1000,
	"t": 1 << 40, "tib": 1 << 40, "tb": 1000 * 1000 * 1000 * 1000,
}

// ParseSize reads 4GiB, 512MiB, 8g, 1.5GiB, 2GB or a plain number of bytes.
func ParseSize(s string) (int64, error) {
	m := sizePattern.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("bad size %q", s)
	}
	unit, ok := sizeUnits[strings.ToLower(m[2])]
	if !ok {
		return 0, fmt.Errorf("bad size unit %q", m[2])
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil || v <= 0 || v*float64(unit) > 1<<62 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return int64(v * float64(unit)), nil
}
