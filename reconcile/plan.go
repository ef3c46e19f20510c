package reconcile

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/spec"
)

// Action is what a plan does to one box.
type Action string

const (
	Create   Action = "create"
	Start    Action = "start"
	Stop     Action = "stop"
	Recreate Action = "recreate"
	Delete   Action = "delete"
	NoOp     Action = "no-op"
)

// Sentinel errors callers branch on.
var (
	ErrNoImage           = errors.New("boxes.lock has no image")
	ErrImageMissing      = errors.New("the locked image is not on the engine")
	ErrUnmanagedConflict = errors.New("a resource boxes needs is taken by one it does not manage")
	ErrStalePlan         = errors.New("plan is stale")
)

// Reason says why a box gets its action. Kind is one of: new, restore, state,
// image, config, missing, dead, duplicate, replace, token, undeclared.
type Reason struct {
	Kind    string `json:"kind"`
	Service string `json:"service,omitempty"`
	Field   string `json:"field,omitempty"`
	Old     string `json:"old,omitempty"`
	New     string `json:"new,omitempty"`
}

func (r Reason) String() string {
	switch r.Kind {
	case "new":
		return "box is declared and has no resources"
	case "restore":
		return "seeded from " + r.New
	case "state":
		return fmt.Sprintf("state: %s → %s", r.Old, r.New)
	case "image":
		return fmt.Sprintf("image: %s → %s", ShortID(r.Old), ShortID(r.New))
	case "config":
		if r.Field == "" {
			return fmt.Sprintf("%s: compose configuration changed (config hash %s → %s)", r.Service, short(r.Old), short(r.New))
		}
		return fmt.Sprintf("%s: %s → %s", r.Field, orNone(r.Old), orNone(r.New))
	case "missing":
		return fmt.Sprintf("container %s is missing", r.Service)
	case "dead":
		return fmt.Sprintf("container %s is %s", r.Service, r.Old)
	case "duplicate":
		return fmt.Sprintf("%s containers of %s (an interrupted recreate)", r.Old, r.Service)
	case "replace":
		return "asked for with --replace"
	case "token":
		return "token not found in .boxes/secrets and not recoverable: a new one is minted"
	case "undeclared":
		return "box is no longer declared in boxes.yaml"
	}
	return r.Kind
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return orNone(h)
}

// ShortID is an image ID as people read it: the first 12 hex digits.
func ShortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	return short(id)
}

// BoxPlan is the action for one box.
type BoxPlan struct {
	Name    string   `json:"name"`
	Host    string   `json:"host"`
	Action  Action   `json:"action"`
	Reasons []Reason `json:"reasons"`
	// State is the declared state (empty for delete).
	State spec.State `json:"state,omitempty"`
	// HostPort is the executor host port a recreate keeps (port: auto); 0 lets Docker pick.
	HostPort int `json:"host_port,omitempty"`
	// Restore is the archive a create is seeded from.
	Restore string `json:"restore,omitempty"`
	// Delete lists what a delete removes; nil otherwise.
	Delete *Deletion `json:"delete,omitempty"`
}

// Deletion is every labelled resource of an undeclared box.
type Deletion struct {
	Containers []NamedID       `json:"containers"`
	Networks   []NamedID       `json:"networks"`
	Volumes    []DeletedVolume `json:"volumes"`
	// Backup is the newest archive found in backups/ for the box; empty if none.
	Backup string `json:"backup"`
}

// NamedID names a resource by its name and its engine ID.
type NamedID struct {
	Name string `json:"name"`
	ID   string `json:"id"`
}

// DeletedVolume is a volume a delete removes, with its size (-1 unknown).
type DeletedVolume struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
}

// Plan is the whole decision: one BoxPlan per declared or observed box, sorted by name.
type Plan struct {
	Boxes []BoxPlan `json:"boxes"`
	// Image is the locked image ID the plan creates and recreates with.
	Image string `json:"image"`
	// Target lists the boxes the plan was limited to; empty means all.
	Target []string `json:"target,omitempty"`
}

// Summary counts the actions of a plan.
type Summary struct {
	Create   int `json:"create"`
	Recreate int `json:"recreate"`
	Start    int `json:"start"`
	Stop     int `json:"stop"`
	Delete   int `json:"delete"`
	NoOp     int `json:"no_op"`
}

// Summary counts the plan's actions.
func (p *Plan) Summary() Summary {
	var s Summary
	for _, b := range p.Boxes {
		switch b.Action {
		case Create:
			s.Create++
		case Recreate:
			s.Recreate++
		case Start:
			s.Start++
		case Stop:
			s.Stop++
		case Delete:
			s.Delete++
		case NoOp:
			s.NoOp++
		}
	}
	return s
}

// Changes reports whether the plan does anything.
func (p *Plan) Changes() bool { return p.Summary().NoOp != len(p.Boxes) }

// Deletes are the names of the boxes the plan deletes.
func (p *Plan) Deletes() []string {
	var names []string
	for _, b := range p.Boxes {
		if b.Action == Delete {
			names = append(names, b.Name)
		}
	}
	return names
}

// Input is everything Plan looks at. Building it does the I/O; Plan does none.
type Input struct {
	Config *spec.Config
	// Image is the locked image ID ("" when boxes.lock has none).
	Image string
	// Observed holds one snapshot per host name ("" is the local engine).
	Observed map[string]*Observed
	// Tokens are the stored (or recovered) tokens of existing boxes.
	Tokens map[string]string
	// Replace names boxes to recreate whatever else they differ in.
	Replace map[string]bool
	// Target limits the plan to these boxes; empty means every box.
	Target map[string]bool
	// VolumeSizes maps host → volume name → bytes, for deletes.
	VolumeSizes map[string]map[string]int64
	// Backups maps a box to its newest archive path.
	Backups map[string]string
}

func (in *Input) targeted(name string) bool { return len(in.Target) == 0 || in.Target[name] }

// NewPlan decides one action per box. It is pure: the same input gives the same plan.
func NewPlan(in Input) (*Plan, error) {
	if in.Config == nil {
		return nil, errors.New("no boxes.yaml")
	}
	p := &Plan{Image: in.Image}
	for name := range in.Target {
		p.Target = append(p.Target, name)
	}
	sort.Strings(p.Target)

	declared := map[string]spec.Box{}
	needsImage := map[string]bool{}
	for _, b := range in.Config.Boxes {
		declared[b.Name] = b
		if in.targeted(b.Name) {
			needsImage[b.Host] = true
		}
	}
	for name := range in.Target {
		if _, ok := declared[name]; ok {
			continue
		}
		if !observedAnywhere(in.Observed, name) {
			return nil, fmt.Errorf("--target %s: no such box in boxes.yaml or on any engine", name)
		}
	}
	if len(needsImage) > 0 {
		if in.Image == "" {
			return nil, ErrNoImage
		}
		for host := range needsImage {
			o := in.Observed[host]
			if o == nil {
				return nil, fmt.Errorf("host %q was not observed", host)
			}
			if !o.Images[in.Image] {
				return nil, fmt.Errorf("%w: %s lacks %s", ErrImageMissing, HostLabel(host), ShortID(in.Image))
			}
		}
	}

	if err := conflicts(in, declared); err != nil {
		return nil, err
	}

	for _, b := range in.Config.Boxes {
		if !in.targeted(b.Name) {
			continue
		}
		if other := observedElsewhere(in.Observed, b.Name, b.Host); other != "" {
			return nil, fmt.Errorf("box %s is declared on %s but exists on %s: moving a box between hosts is not supported yet; put host: back, or save it and load it on the new host", b.Name, HostLabel(b.Host), HostLabel(other))
		}
		bp, err := planDeclared(in, b)
		if err != nil {
			return nil, fmt.Errorf("planning %s: %w", b.Name, err)
		}
		p.Boxes = append(p.Boxes, bp)
	}

	hosts := make([]string, 0, len(in.Observed))
	for h := range in.Observed {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, host := range hosts {
		o := in.Observed[host]
		for _, name := range o.Boxes() {
			if _, ok := declared[name]; ok || !in.targeted(name) {
				continue
			}
			p.Boxes = append(p.Boxes, planDelete(in, host, name, o.Of(name)))
		}
	}
	sort.Slice(p.Boxes, func(i, j int) bool { return p.Boxes[i].Name < p.Boxes[j].Name })
	return p, nil
}

func planDeclared(in Input, b spec.Box) (BoxPlan, error) {
	bp := BoxPlan{Name: b.Name, Host: b.Host, State: b.State}
	var r Resources
	if o := in.Observed[b.Host]; o != nil {
		r = o.Of(b.Name)
	}
	if r.Empty() {
		bp.Action = Create
		bp.Reasons = []Reason{{Kind: "new"}}
		if b.Restore != "" {
			bp.Restore = b.Restore
			bp.Reasons = append(bp.Reasons, Reason{Kind: "restore", New: b.Restore})
		}
		return bp, nil
	}

	if exec, ok := r.Container(compose.ExecutorService); ok && b.Executor.Port == 0 {
		bp.HostPort = executorHostPort(exec)
	}
	reasons, err := recreateReasons(in, b, r, bp.HostPort)
	if err != nil {
		return bp, err
	}
	if len(reasons) > 0 {
		bp.Action = Recreate
		bp.Reasons = reasons
		return bp, nil
	}

	running := 0
	for _, c := range r.Containers {
		if isRunning(c.State) {
			running++
		}
	}
	switch {
	case b.State == spec.Running && running < len(r.Containers):
		bp.Action = Start
		bp.Reasons = []Reason{{Kind: "state", Old: string(spec.Stopped), New: string(spec.Running)}}
	case b.State == spec.Stopped && running > 0:
		bp.Action = Stop
		bp.Reasons = []Reason{{Kind: "state", Old: string(spec.Running), New: string(spec.Stopped)}}
	default:
		bp.Action = NoOp
	}
	return bp, nil
}

// recreateReasons lists why a box's containers must be replaced; none means they can stay.
func recreateReasons(in Input, b spec.Box, r Resources, hostPort int) ([]Reason, error) {
	var reasons []Reason
	if in.Replace[b.Name] {
		reasons = append(reasons, Reason{Kind: "replace"})
	}
	token, haveToken := in.Tokens[b.Name]
	var hashes, autoHashes map[string]string
	if haveToken {
		var err error
		if hashes, err = desiredHashes(in, b, token, hostPort); err != nil {
			return nil, err
		}
		// A container made with port: auto was hashed before Docker chose its port.
		if b.Executor.Port == 0 && hostPort != 0 {
			if autoHashes, err = desiredHashes(in, b, token, 0); err != nil {
				return nil, err
			}
		}
	} else {
		reasons = append(reasons, Reason{Kind: "token"})
	}

	named := map[string]bool{}
	for _, service := range []string{compose.AgentService, compose.ExecutorService} {
		var cs []Container
		for _, c := range r.Containers {
			if c.Service == service {
				cs = append(cs, c)
			}
		}
		switch {
		case len(cs) == 0:
			reasons = append(reasons, Reason{Kind: "missing", Service: service})
			continue
		case len(cs) > 1:
			reasons = append(reasons, Reason{Kind: "duplicate", Service: service, Old: fmt.Sprint(len(cs))})
			continue
		}
		c := cs[0]
		if c.State == "dead" || c.State == "removing" {
			reasons = append(reasons, Reason{Kind: "dead", Service: service, Old: c.State})
			continue
		}
		if c.Image != in.Image {
			if !hasKind(reasons, "image") {
				reasons = append(reasons, Reason{Kind: "image", Old: c.Image, New: in.Image})
			}
			continue
		}
		if !haveToken || c.ConfigHash == hashes[service] || (autoHashes != nil && c.ConfigHash == autoHashes[service]) {
			continue
		}
		changes := compose.SettingsDiff(c.Labels[compose.SettingsLabel], compose.ServiceSettings(b, service))
		if len(changes) == 0 {
			reasons = append(reasons, Reason{Kind: "config", Service: service, Old: c.ConfigHash, New: hashes[service]})
			continue
		}
		for _, ch := range changes {
			// cpus and memory shape both containers; name each field once.
			if !named[ch.Field] {
				named[ch.Field] = true
				reasons = append(reasons, Reason{Kind: "config", Field: ch.Field, Old: ch.Old, New: ch.New})
			}
		}
	}
	for _, vol := range []string{compose.AgentVolume, compose.ExecutorVolume} {
		if !hasVolume(r, compose.VolumeName(b.Name, vol)) && len(r.Containers) > 0 {
			reasons = append(reasons, Reason{Kind: "missing", Service: "volume " + vol})
		}
	}
	return reasons, nil
}

func desiredHashes(in Input, b spec.Box, token string, hostPort int) (map[string]string, error) {
	project, err := compose.Project(compose.Input{
		Box:        b,
		Image:      in.Image,
		Token:      token,
		HostPort:   hostPort,
		WorkDir:    filepath.Dir(in.Config.Path),
		ConfigFile: in.Config.Path,
	})
	if err != nil {
		return nil, err
	}
	return compose.ServiceHashes(project)
}

func planDelete(in Input, host, name string, r Resources) BoxPlan {
	d := &Deletion{Backup: in.Backups[name], Containers: []NamedID{}, Networks: []NamedID{}, Volumes: []DeletedVolume{}}
	for _, c := range r.Containers {
		d.Containers = append(d.Containers, NamedID{Name: c.Name, ID: c.ID})
	}
	for _, n := range r.Networks {
		d.Networks = append(d.Networks, NamedID{Name: n.Name, ID: n.ID})
	}
	for _, v := range r.Volumes {
		size := int64(-1)
		if s, ok := in.VolumeSizes[host][v.Name]; ok {
			size = s
		}
		d.Volumes = append(d.Volumes, DeletedVolume{Name: v.Name, Size: size})
	}
	return BoxPlan{Name: name, Host: host, Action: Delete, Reasons: []Reason{{Kind: "undeclared"}}, Delete: d}
}

// conflicts fails when a name a targeted declared box needs is held by an unlabelled resource.
func conflicts(in Input, declared map[string]spec.Box) error {
	var found []string
	names := make([]string, 0, len(declared))
	for n := range declared {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		b := declared[name]
		o := in.Observed[b.Host]
		if o == nil || !in.targeted(name) {
			continue
		}
		for _, s := range []string{compose.AgentService, compose.ExecutorService} {
			if n := compose.ContainerName(name, s); o.Unmanaged.Containers[n] {
				found = append(found, fmt.Sprintf("container %s on %s (needed by box %s)", n, HostLabel(b.Host), name))
			}
		}
		for _, v := range []string{compose.AgentVolume, compose.ExecutorVolume} {
			if n := compose.VolumeName(name, v); o.Unmanaged.Volumes[n] {
				found = append(found, fmt.Sprintf("volume %s on %s (needed by box %s)", n, HostLabel(b.Host), name))
			}
		}
		if n := compose.NetworkName(name); o.Unmanaged.Networks[n] {
			found = append(found, fmt.Sprintf("network %s on %s (needed by box %s)", n, HostLabel(b.Host), name))
		}
	}
	if len(found) == 0 {
		return nil
	}
	return &ConflictError{Resources: found}
}

// ConflictError names the unlabelled resources that block a plan.
type ConflictError struct{ Resources []string }

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s: %s", ErrUnmanagedConflict, strings.Join(e.Resources, "; "))
}

func (e *ConflictError) Unwrap() error { return ErrUnmanagedConflict }

func observedAnywhere(obs map[string]*Observed, name string) bool {
	for _, o := range obs {
		if !o.Of(name).Empty() {
			return true
		}
	}
	return false
}

func observedElsewhere(obs map[string]*Observed, name, host string) string {
	hosts := make([]string, 0, len(obs))
	for h := range obs {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		if h != host && !obs[h].Of(name).Empty() {
			return h
		}
	}
	return ""
}

func executorHostPort(c Container) int {
	if p, ok := c.Published(compose.ExecutorPort); ok {
		return p.HostPort
	}
	port, _ := strconv.Atoi(c.Labels[compose.HostPortLabel])
	return port
}

func isRunning(state string) bool {
	return state == "running" || state == "restarting" || state == "paused"
}

func hasKind(rs []Reason, kind string) bool {
	for _, r := range rs {
		if r.Kind == kind {
			return true
		}
	}
	return false
}

func hasVolume(r Resources, name string) bool {
	for _, v := range r.Volumes {
		if v.Name == name {
			return true
		}
	}
	return false
}

// HostLabel names a host in messages: "the local engine" or "host NAME".
func HostLabel(host string) string {
	if host == "" {
		return "the local engine"
	}
	return "host " + host
}
