package reconcile

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/internal/text"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/statedir"
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
	ErrNoImage           = hint.New("boxes.lock has no image", "boxes build makes the image and records it (or boxes lock image REF pins one the engine has)")
	ErrImageMissing      = hint.New("the locked image is not on the engine", "boxes build makes it on this engine (or boxes lock image REF pins one it has)")
	ErrUnmanagedConflict = hint.New("a resource boxes needs is taken by one it does not manage", "boxes never touches resources it did not label; rename or remove them yourself, or rename the box")
	ErrStalePlan         = errors.New("plan is stale")
)

// Reason says why a box gets its action. Kind is one of: new, restore, state,
// created, paused, stopped, frozen, image, config, missing, nocontainers, dead,
// restarting, exited, network, disconnected, published, volume, duplicate,
// renamed, networks, replace, token, undeclared, incomplete, door, credential,
// machine.
type Reason struct {
	Kind    string `json:"kind"`
	Service string `json:"service,omitempty"`
	Field   string `json:"field,omitempty"`
	Old     string `json:"old,omitempty"`
	New     string `json:"new,omitempty"`
	// ExitCode and Restarts describe a container that crashed (restarting, exited).
	ExitCode int `json:"exit_code,omitempty"`
	Restarts int `json:"restarts,omitempty"`
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
	case "door":
		return fmt.Sprintf("the network door: the box gets its gate (egress: %s, private ranges closed) and the agent moves to a network with no route out", r.New)
	case "credential":
		return fmt.Sprintf("credential %s: its value changed on this machine", r.Field)
	case "machine":
		return machineChange(r)
	case "config":
		if r.Field == "egress" || r.Field == "private" {
			return ruleChange(r.Field, r.Old, r.New)
		}
		if name, ok := strings.CutPrefix(r.Field, "credentials."); ok {
			return credentialChange(name, r.Old, r.New)
		}
		if r.Field == "" {
			return fmt.Sprintf("%s: compose configuration changed (config hash %s → %s)", r.Service, short(r.Old), short(r.New))
		}
		return fmt.Sprintf("%s: %s → %s", r.Field, orNone(r.Old), orNone(r.New))
	case "created":
		return fmt.Sprintf("%s: created, never started", r.Service)
	case "paused":
		return fmt.Sprintf("%s is paused", r.Service)
	case "stopped":
		return fmt.Sprintf("%s: stopped (exit %d) → running", r.Service, r.ExitCode)
	case "frozen":
		return "a save was cut short and left the box frozen (paused or quiesced): it is resumed"
	case "incomplete":
		if r.Field == "from" {
			return "fork incomplete: seeded again from " + FromText(r.New)
		}
		return "restore incomplete: seeded again from " + r.New
	case "fork":
		return "seeded from " + FromText(r.New)
	case "missing":
		return fmt.Sprintf("container %s is missing", r.Service)
	case "nocontainers":
		return "containers were never created, or were removed since (volumes kept)"
	case "restarting":
		return fmt.Sprintf("%s is restarting (%s)", r.Service, r.crash())
	case "exited":
		return fmt.Sprintf("%s exited on its own (%s)", r.Service, r.crash())
	case "network":
		return fmt.Sprintf("network %s is missing", r.Old)
	case "disconnected":
		return fmt.Sprintf("%s is not connected to network %s", r.Service, r.Old)
	case "published":
		return fmt.Sprintf("%s published on %s, declared %s", r.Service, orNone(r.Old), r.New)
	case "volume":
		if r.New != "" {
			return fmt.Sprintf("volume %s is missing: %s", r.Old, r.New)
		}
		return fmt.Sprintf("volume %s is missing", r.Old)
	case "dead":
		return fmt.Sprintf("container %s is %s", r.Service, r.Old)
	case "renamed":
		return fmt.Sprintf("%s is named %s, not %s (an interrupted recreate)", r.Service, r.Old, r.New)
	case "duplicate":
		return fmt.Sprintf("%s containers of %s (an interrupted recreate)", r.Old, r.Service)
	case "networks":
		return fmt.Sprintf("%s networks named %s (an interrupted create): the box keeps one, the others are removed", r.New, r.Old)
	case "replace":
		return "asked for with --replace"
	case "token":
		return "token not found in .boxes/secrets and not recoverable: a new one is minted"
	case "undeclared":
		return "box is no longer declared in boxes.yaml"
	case "pool":
		return fmt.Sprintf("pool %s keeps %s free boxes: this one is beyond its size", r.Old, r.New)
	}
	if s, ok := moveReason(r); ok {
		return s
	}
	return r.Kind
}

func (r Reason) crash() string {
	var parts []string
	// A loop caught while the container runs for an instant has no exit
	// code to show; a real exit 0 followed by restarts shows none either.
	if r.ExitCode != 0 || r.Restarts == 0 {
		parts = append(parts, fmt.Sprintf("exit %d", r.ExitCode))
	}
	if r.Old != "" {
		parts = append(parts, r.Old) // killed for memory, or Docker's start error
	}
	switch r.Restarts {
	case 0:
	case 1:
		parts = append(parts, "1 restart")
	default:
		parts = append(parts, fmt.Sprintf("%d restarts", r.Restarts))
	}
	return strings.Join(parts, ", ")
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
	// From is the box, or snapshot of it (BOX@LABEL), a create is seeded
	// from, on its engine.
	From string `json:"from,omitempty"`
	// GateOnly is a recreate or a start of the gate alone: the agent keeps
	// running.
	GateOnly bool `json:"gate_only,omitempty"`
	// Delete lists what a delete removes; nil otherwise.
	Delete *Deletion `json:"delete,omitempty"`
	// Strays are containers of a recreated box that do not have their
	// service's name (left by an interrupted recreate), or that are on one
	// of its StrayNetworks: apply removes them first, so that compose finds
	// one container per service.
	Strays []NamedID `json:"strays,omitempty"`
	// StrayNetworks are the box's networks beyond the one it keeps when
	// several of its labelled networks share its network's name (a create
	// that raced one still in flight in the engine): apply removes them after
	// the strays, before compose looks the network up by name.
	StrayNetworks []NamedID `json:"stray_networks,omitempty"`
	// Move is what a move carries; nil otherwise.
	Move *Moving `json:"move,omitempty"`
	// Held are the reasons to recreate a leased pool box, which waits for
	// its release: a box is never recreated under its holder.
	Held []Reason `json:"held,omitempty"`
}

// Deletion is every labelled resource of an undeclared box.
type Deletion struct {
	Containers []NamedID       `json:"containers"`
	Networks   []NamedID       `json:"networks"`
	Volumes    []DeletedVolume `json:"volumes"`
	// Backup is the newest archive found in backups/ for the box; empty if none.
	Backup string `json:"backup"`
	// BackupUnknown marks a plan made without the engines (boxes diff):
	// backups were not looked for, rather than not found.
	BackupUnknown bool `json:"backup_unknown,omitempty"`
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
	// Unread says why the size could not be read, when it could not.
	Unread string `json:"size_unread,omitempty"`
}

// Plan is the whole decision: one BoxPlan per declared or observed box, sorted by name.
type Plan struct {
	Boxes []BoxPlan `json:"boxes"`
	// Image is the locked image ID the plan creates and recreates with.
	Image string `json:"image"`
	// Target lists the boxes the plan was limited to; empty means all.
	Target []string `json:"target,omitempty"`
	// Images bring the image to the hosts that lack it, before their boxes.
	Images []ImageTransfer `json:"images,omitempty"`
	// Pools are what the plan does to each pool of boxes.yaml.
	Pools []PoolPlan `json:"pools,omitempty"`
	// LeasedKept are the leased boxes boxes.yaml no longer declares (their
	// pool gone, or moved to another host): kept for their holders, and
	// deleted by their reset when released or expired.
	LeasedKept []string `json:"leased_kept,omitempty"`
}

// Summary counts the actions of a plan.
type Summary struct {
	Create   int `json:"create"`
	Recreate int `json:"recreate"`
	Start    int `json:"start"`
	Stop     int `json:"stop"`
	Delete   int `json:"delete"`
	Move     int `json:"move,omitempty"`
	NoOp     int `json:"no_op"`
	// Stream and Pull count the image's transfers to hosts that lack it.
	Stream int `json:"image_stream,omitempty"`
	Pull   int `json:"image_pull,omitempty"`
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
		case Move:
			s.Move++
		case NoOp:
			s.NoOp++
		}
	}
	for _, t := range p.Images {
		if t.From == nil {
			s.Pull++
		} else {
			s.Stream++
		}
	}
	return s
}

// Stable is the plan without what changes on its own while nothing is done
// (a crash-looping container's restart count, a volume's size), for a saved plan's
// fingerprint: such a plan stays applicable while the count grows.
func (p *Plan) Stable() *Plan {
	out := *p
	out.Boxes = make([]BoxPlan, len(p.Boxes))
	for i, b := range p.Boxes {
		b.Reasons = append([]Reason(nil), b.Reasons...)
		for j := range b.Reasons {
			b.Reasons[j].Restarts = 0
		}
		// A box being deleted may still write to its volumes.
		if b.Delete != nil {
			d := *b.Delete
			d.Volumes = make([]DeletedVolume, len(b.Delete.Volumes))
			for j, v := range b.Delete.Volumes {
				d.Volumes[j] = DeletedVolume{Name: v.Name}
			}
			b.Delete = &d
		}
		if b.Move != nil {
			m := *b.Move
			m.Size, m.Unread = 0, ""
			b.Move = &m
		}
		out.Boxes[i] = b
	}
	return &out
}

// Changes reports whether the plan does anything.
func (p *Plan) Changes() bool { return p.Summary().NoOp != len(p.Boxes) }

// Changing are the names of the boxes the plan changes, in order, and their actions.
func (p *Plan) Changing() (names, actions []string) {
	for _, b := range p.Boxes {
		if b.Action != NoOp {
			names, actions = append(names, b.Name), append(actions, string(b.Action))
		}
	}
	return names, actions
}

// Unconfirmed are the boxes the plan deletes that confirmed does not name.
func (p *Plan) Unconfirmed(confirmed []string) []string {
	var names []string
	for _, name := range p.Deletes() {
		if !slices.Contains(confirmed, name) {
			names = append(names, name)
		}
	}
	return names
}

// NotDeleted are the names in confirmed that the plan neither deletes nor
// moves (a move may delete the old copy): a --confirm-delete that
// confirms nothing, each once, in the order given.
func (p *Plan) NotDeleted(confirmed []string) []string {
	var out []string
	for _, name := range confirmed {
		if slices.Contains(out, name) {
			continue
		}
		found := false
		for _, b := range p.Boxes {
			if b.Name == name && (b.Action == Delete || b.Action == Move) {
				found = true
			}
		}
		if !found {
			out = append(out, name)
		}
	}
	return out
}

// UnconfirmedError is the refusal of a plan that deletes names (its
// Unconfirmed) with no terminal to confirm them; its hint gives the flags.
func UnconfirmedError(names []string) error {
	flags := make([]string, len(names))
	for i, n := range names {
		flags[i] = "--confirm-delete " + n
	}
	return hint.Wrap(fmt.Errorf("the plan deletes %s with its volumes, and there is no terminal to confirm it; nothing was changed", strings.Join(names, ", ")), "pass %s", strings.Join(flags, " "))
}

// MovesToConfirm splits the plan's moves by whether their old copy may be
// deleted once the new one is verified: yes holds those confirmed
// names, undecided the others, to be asked.
func (p *Plan) MovesToConfirm(confirmed []string) (yes map[string]bool, undecided []BoxPlan) {
	yes = map[string]bool{}
	for _, b := range p.Boxes {
		switch {
		case b.Action != Move || b.Move == nil:
		case slices.Contains(confirmed, b.Name):
			yes[b.Name] = true
		default:
			undecided = append(undecided, b)
		}
	}
	return yes, undecided
}

// Held names every box of the plan: the locks a one-box plan's caller
// already holds.
func (p *Plan) Held() map[string]bool {
	held := map[string]bool{}
	for _, b := range p.Boxes {
		held[b.Name] = true
	}
	return held
}

// Done is the count of what an applied plan did, e.g. "1 created, 0
// recreated, 0 started, 0 stopped, 0 deleted", moves and images brought to
// hosts named only when there are some.
func (s Summary) Done() string {
	moved := ""
	if s.Move > 0 {
		moved = fmt.Sprintf(", %d moved", s.Move)
	}
	if s.Stream > 0 {
		moved += ", " + text.Plural(s.Stream, "image", "images") + " streamed"
	}
	if s.Pull > 0 {
		moved += ", " + text.Plural(s.Pull, "image", "images") + " pulled"
	}
	return fmt.Sprintf("%d created, %d recreated, %d started, %d stopped, %d deleted%s", s.Create, s.Recreate, s.Start, s.Stop, s.Delete, moved)
}

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
	// ImageRef is boxes.lock's registry reference of the image when it is
	// pinned by digest (see PinnedByDigest): hosts that lack the image pull
	// it rather than have it streamed. "" when the lock has none.
	ImageRef string
	// Observed holds one snapshot per host name ("" is the local engine).
	Observed map[string]*Observed
	// Tokens are the stored (or recovered) tokens of existing boxes.
	Tokens map[string]string
	// Replace names boxes to recreate whatever else they differ in.
	Replace map[string]bool
	// Target limits the plan to these boxes; empty means every box.
	Target map[string]bool
	// Backups maps a box to its newest archive path.
	Backups map[string]string
	// Moves are the records of moves begun on this machine, by box.
	Moves map[string]statedir.MoveRecord
	// Frozen names the boxes a save that died may have left frozen (see
	// StaleFreezes).
	Frozen map[string]bool
	// Restoring holds the restores cut short, by box (see Restores).
	Restoring map[string]statedir.Restoring
	// Doors are what each box's gate is made with besides boxes.yaml (its
	// credentials' values, its host's closed addresses), by box.
	Doors map[string]compose.Door
	// Unread names the boxes some of whose credentials' values could not
	// be read here: whether their gates' values changed cannot be told, so
	// it is not a reason (a plan that makes such a gate fails instead).
	Unread map[string]bool
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
		if !observedAnywhere(in.Observed, in.Config.Fleet, name) {
			return nil, fmt.Errorf("--target %s: no such box in boxes.yaml or on any engine", name)
		}
	}
	if err := imageReachable(in, needsImage); err != nil {
		return nil, err
	}
	if err := conflicts(in, declared); err != nil {
		return nil, err
	}
	if err := heldByOtherFleets(in); err != nil {
		return nil, err
	}
	fleet := in.Config.Fleet

	for _, b := range in.Config.Boxes {
		if !in.targeted(b.Name) {
			continue
		}
		if other, found := observedElsewhere(in.Observed, fleet, b.Name, b.Host); found {
			bp, err := planMove(in, b, other)
			if err != nil {
				return nil, err
			}
			p.Boxes = append(p.Boxes, bp)
			continue
		}
		bp, err := planDeclared(in, b)
		if err != nil {
			return nil, fmt.Errorf("planning %s: %w", b.Name, err)
		}
		p.Boxes = append(p.Boxes, bp)
	}

	for _, d := range deletions(in) {
		p.Boxes = append(p.Boxes, planDelete(in, d.host, d.name, d.r))
	}
	sort.Slice(p.Boxes, func(i, j int) bool { return p.Boxes[i].Name < p.Boxes[j].Name })
	if err := MissingRuntime(in.Config, in.Observed, p.Boxes); err != nil {
		return nil, err
	}
	if err := OverHost(in.Config, in.Observed, p.Boxes); err != nil {
		return nil, err
	}
	images, err := imageTransfers(in, p.Boxes)
	if err != nil {
		return nil, err
	}
	p.Images = images
	if len(in.Target) == 0 {
		p.Pools = poolPlans(in, p)
		p.LeasedKept = leasedKept(in)
	}
	return p, nil
}

// imageReachable fails unless every host in hosts (those of the boxes
// planned) was observed and has the lock's image or can get it: from
// another host that has it, or from its registry (imageTransfers).
func imageReachable(in Input, hosts map[string]bool) error {
	if len(hosts) == 0 {
		return nil
	}
	if in.Image == "" {
		return ErrNoImage
	}
	sorted := make([]string, 0, len(hosts))
	for host := range hosts {
		sorted = append(sorted, host)
	}
	sort.Strings(sorted) // the same error for the same input
	_, haveSource := imageSource(in)
	for _, host := range sorted {
		o := in.Observed[host]
		if o == nil {
			return fmt.Errorf("host %q was not observed", host)
		}
		if !o.Images[in.Image] && !haveSource && in.ImageRef == "" {
			return imageMissing(host, in.Image)
		}
	}
	return nil
}

type deletion struct {
	host, name string
	r          Resources
}

// deletions are the boxes a plan deletes: undeclared, targeted, and carrying
// this fleet's label. Another fleet's box is none of this fleet's business,
// and one made before fleets existed is left to boxes rm.
func deletions(in Input) []deletion {
	declared := map[string]bool{}
	for _, b := range in.Config.Boxes {
		declared[b.Name] = true
	}
	fleet := in.Config.Fleet
	hosts := make([]string, 0, len(in.Observed))
	for h := range in.Observed {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	var out []deletion
	for _, host := range hosts {
		o := in.Observed[host]
		for _, name := range o.Boxes() {
			if declared[name] || !in.targeted(name) {
				continue
			}
			r := o.Of(name)
			if !r.Owned(fleet) || r.HeldBy(fleet) != "" {
				continue
			}
			if o.Leases(fleet)[name].Held() {
				continue // leased: deleted by its reset (see LeasedKept)
			}
			out = append(out, deletion{host, name, r})
		}
	}
	return out
}

func planDeclared(in Input, b spec.Box) (BoxPlan, error) {
	bp := BoxPlan{Name: b.Name, Host: b.Host, State: b.State}
	var r Resources
	if o := in.Observed[b.Host]; o != nil {
		r = o.Of(b.Name)
	}
	restoring, incomplete := in.Restoring[b.Name]
	if incomplete && restoring.Host != b.Host {
		incomplete = false // left on a host the box has left: not this box's
	}
	if r.Empty() {
		bp.Action = Create
		bp.Reasons = []Reason{{Kind: "new"}}
		switch {
		case incomplete:
			seedFrom(restoring, &bp)
			bp.Reasons = append(bp.Reasons, seedAgain(restoring))
		case b.Restore != "":
			bp.Restore = b.Restore
			bp.Reasons = append(bp.Reasons, Reason{Kind: "restore", New: b.Restore})
		case b.From != "":
			bp.From = b.From
			bp.Reasons = append(bp.Reasons, Reason{Kind: "fork", New: b.From})
		}
		if bp.From != "" {
			if err := forkSource(in, b.Host, bp.From); err != nil {
				return bp, err
			}
		}
		return bp, nil
	}
	if incomplete {
		return planUnfinished(in, b, r, bp, restoring)
	}
	frozen := in.Frozen[b.Name] && len(r.Containers) > 0

	if exec, ok := r.Container(compose.ExecutorService); ok && b.Executor.Port == 0 {
		bp.HostPort = executorHostPort(exec)
	}
	reasons, err := recreateReasons(in, b, r, bp.HostPort)
	if err != nil {
		return bp, err
	}
	if len(reasons) > 0 && leased(in, b) {
		bp.Held = reasons
		return planState(b, r, bp, frozen), nil
	}
	strayNets, onStray := StrayNetworks(b.Name, r)
	if len(strayNets) > 0 {
		for _, name := range []string{compose.NetworkName(b.Name), compose.InsideNetworkName(b.Name)} {
			if n := countNamed(strayNets, name); n > 0 {
				reasons = append(reasons, Reason{Kind: "networks", Old: name, New: strconv.Itoa(n + 1)})
			}
		}
	}
	if len(reasons) > 0 {
		bp.Action = Recreate
		bp.Reasons = reasons
		bp.GateOnly = GateOnly(reasons)
		bp.StrayNetworks = strayNets
		for _, c := range r.Containers {
			if (HasKind(reasons, "duplicate") && c.Name != compose.ContainerName(b.Name, c.Service)) || onStray[c.ID] {
				bp.Strays = append(bp.Strays, NamedID{Name: c.Name, ID: c.ID})
			}
		}
		if frozen {
			bp.Reasons = append(bp.Reasons, Reason{Kind: "frozen"})
		}
		return bp, nil
	}

	return planState(b, r, bp, frozen), nil
}

// planUnfinished plans box b whose restore from an archive (or fork) was
// cut short: it never runs on part of its data, and is seeded again from
// the same archive (or box). With no container yet (the cut came before
// compose made them) that is a create over the volumes already there; with
// containers, a recreate.
func planUnfinished(in Input, b spec.Box, r Resources, bp BoxPlan, restoring statedir.Restoring) (BoxPlan, error) {
	seedFrom(restoring, &bp)
	if bp.From != "" {
		if err := forkSource(in, b.Host, bp.From); err != nil {
			return bp, err
		}
	}
	if len(r.Containers) == 0 {
		bp.Action = Create
		bp.Reasons = []Reason{seedAgain(restoring)}
		return bp, nil
	}
	reasons, err := recreateReasons(in, b, r, 0)
	if err != nil && !errors.Is(err, ErrVolumeMissing) {
		return bp, err
	}
	bp.Action = Recreate
	bp.Reasons = append([]Reason{seedAgain(restoring)}, withoutKind(reasons, "nocontainers")...)
	bp.Strays = strays(b.Name, r, reasons)
	return bp, nil
}

// planState plans box b, whose containers are as declared, into its
// declared state: started, stopped, or left alone. A frozen box (a save
// died with it paused) is started or stopped with that said.
func planState(b spec.Box, r Resources, bp BoxPlan, frozen bool) BoxPlan {
	switch {
	case b.State == spec.Running:
		reasons := startReasons(r)
		if frozen {
			reasons = append(reasons, Reason{Kind: "frozen"})
		}
		if len(reasons) > 0 {
			bp.Action, bp.Reasons = Start, reasons
			bp.GateOnly = GateOnly(reasons)
			return bp
		}
	case anyRunning(r):
		bp.Action = Stop
		bp.Reasons = []Reason{{Kind: "state", Old: string(spec.Running), New: string(spec.Stopped)}}
		if frozen {
			bp.Reasons = append(bp.Reasons, Reason{Kind: "frozen"})
		}
		return bp
	}
	bp.Action = NoOp
	return bp
}

// strays are the containers of a box to remove before recreating it: those
// an interrupted recreate left beside the ones with their service's name.
func strays(box string, r Resources, reasons []Reason) []NamedID {
	if !HasKind(reasons, "duplicate") {
		return nil
	}
	var out []NamedID
	for _, c := range r.Containers {
		if c.Name != compose.ContainerName(box, c.Service) {
			out = append(out, NamedID{Name: c.Name, ID: c.ID})
		}
	}
	return out
}

func withoutKind(rs []Reason, kind string) []Reason {
	var out []Reason
	for _, r := range rs {
		if r.Kind != kind {
			out = append(out, r)
		}
	}
	return out
}

// startReasons say why a box declared running needs a start: containers
// stopped (by boxes stop or docker compose stop), created by an apply that
// was cut short before it started them, or paused. A box whose agent is
// stopped is a box stopped; a container stopped beside an agent that runs
// (a gate killed) is named, for it alone is started.
func startReasons(r Resources) []Reason {
	var reasons []Reason
	for _, service := range compose.Services {
		c, _ := r.Container(service)
		switch c.State {
		case engine.Created:
			reasons = append(reasons, Reason{Kind: "created", Service: service})
		case engine.Paused:
			reasons = append(reasons, Reason{Kind: "paused", Service: service})
		case engine.Exited:
			reasons = append(reasons, Reason{Kind: "stopped", Service: service, ExitCode: c.ExitCode})
		}
	}
	if agent, _ := r.Container(compose.AgentService); HasKind(reasons, "stopped") && !agent.State.Alive() {
		reasons = append([]Reason{{Kind: "state", Old: string(spec.Stopped), New: string(spec.Running)}}, withoutKind(reasons, "stopped")...)
	}
	return reasons
}

func anyRunning(r Resources) bool {
	for _, c := range r.Containers {
		if c.State.Alive() {
			return true
		}
	}
	return false
}

// Troubled reports whether a container is restarting or exited with a code
// that a stop does not give, so that observing reads its restart count.
func Troubled(c Container) bool {
	return c.State == engine.Restarting || (c.State == engine.Exited && !stopExit(c.ExitCode))
}

// stopExit reports whether code is what a container stopped from outside
// exits with: 0 (clean), 130, 137, 143 (SIGINT, SIGKILL, SIGTERM from
// docker stop, compose stop or boxes stop). Anything else, an OOM kill or a
// start error, is a crash.
func stopExit(code int) bool {
	return code == 0 || code == 130 || code == 137 || code == 143
}

// crashReason is the reason a container of a box declared running must be
// replaced because it crashed, if it did.
func crashReason(c Container) (Reason, bool) {
	r := Reason{Service: c.Service, ExitCode: c.ExitCode, Restarts: c.Restarts}
	switch {
	case c.OOMKilled:
		r.Old = "killed for lack of memory"
	case c.Error != "":
		r.Old = c.Error
	}
	switch {
	case c.State == engine.Restarting:
		r.Kind = "restarting"
	case c.State == engine.Exited && (c.OOMKilled || c.Error != "" || !stopExit(c.ExitCode)):
		r.Kind = "exited"
	default:
		return Reason{}, false
	}
	return r, true
}

// recreateReasons lists why a box's containers must be replaced; none means they can stay.
func recreateReasons(in Input, b spec.Box, r Resources, hostPort int) ([]Reason, error) {
	var reasons []Reason
	if in.Replace[b.Name] {
		reasons = append(reasons, Reason{Kind: "replace"})
	}
	want, err := wantedHashes(in, b, hostPort)
	if err != nil {
		return nil, err
	}
	if !want.token() {
		reasons = append(reasons, Reason{Kind: "token"})
	}
	if len(r.Containers) == 0 {
		// Volumes or a network without containers: an apply cut short
		// before compose created them, or someone removed them.
		reasons = append(reasons, Reason{Kind: "nocontainers"})
	}
	network := compose.NetworkName(b.Name)
	haveNetwork := hasNetwork(r, network)
	if !haveNetwork && len(r.Containers) > 0 {
		reasons = append(reasons, Reason{Kind: "network", Old: network})
	}
	// The inside network, once the box has its gate (before, the door's
	// reason makes it).
	if inside := compose.InsideNetworkName(b.Name); len(r.Containers) > 0 && !hasNetwork(r, inside) {
		if _, gated := r.Container(compose.GateService); gated {
			reasons = append(reasons, Reason{Kind: "network", Old: inside})
		}
	}
	named := map[string]bool{}
	if door, ok := doorReason(b, r); ok {
		reasons = append(reasons, door)
	}
	for _, service := range compose.Services {
		if len(r.Containers) == 0 {
			break
		}
		reasons = serviceReasons(reasons, in, b, r, service, want, haveNetwork, named)
	}
	return volumeReasons(reasons, in, b, r)
}

// hashes are the config hashes a box's containers should have, by service:
// none without the box's token; auto, when set, as hashed before Docker
// chose a port: auto executor's port.
type hashes struct {
	want, auto map[string]string
}

// token reports whether the box's token was known, and so its hashes.
func (h hashes) token() bool { return h.want != nil }

// matches reports whether hash is what service's container should have.
func (h hashes) matches(service, hash string) bool {
	return hash == h.want[service] || (h.auto != nil && hash == h.auto[service])
}

func wantedHashes(in Input, b spec.Box, hostPort int) (hashes, error) {
	token, ok := in.Tokens[b.Name]
	if !ok {
		return hashes{}, nil
	}
	var h hashes
	var err error
	if h.want, err = desiredHashes(in, b, token, hostPort); err != nil {
		return hashes{}, err
	}
	// A container made with port: auto was hashed before Docker chose its port.
	if b.Executor.Port == 0 && hostPort != 0 {
		if h.auto, err = desiredHashes(in, b, token, 0); err != nil {
			return hashes{}, err
		}
	}
	return h, nil
}

// serviceReasons adds why service's container of box b (resources r) must
// be replaced; named are the settings fields already named, which cpus and
// memory, shaping both containers, would otherwise name twice.
func serviceReasons(reasons []Reason, in Input, b spec.Box, r Resources, service string, h hashes, haveNetwork bool, named map[string]bool) []Reason {
	var cs []Container
	for _, c := range r.Containers {
		if c.Service == service {
			cs = append(cs, c)
		}
	}
	switch {
	case len(cs) == 0 && service == compose.GateService && HasKind(reasons, "door"):
		return reasons // the door's reason says it
	case len(cs) == 0:
		return append(reasons, Reason{Kind: "missing", Service: service})
	case len(cs) > 1:
		return append(reasons, Reason{Kind: "duplicate", Service: service, Old: fmt.Sprint(len(cs))})
	}
	c := cs[0]
	// compose names a replacement ID_NAME and renames it last: a
	// recreate killed between removing the old container and the
	// rename leaves the box's only container under the wrong name.
	if want := compose.ContainerName(b.Name, service); c.Name != want {
		return append(reasons, Reason{Kind: "renamed", Service: service, Old: c.Name, New: want})
	}
	if c.State == engine.Dead || c.State == engine.Removing {
		return append(reasons, Reason{Kind: "dead", Service: service, Old: string(c.State)})
	}
	if b.State == spec.Running {
		if crash, ok := crashReason(c); ok {
			reasons = append(reasons, crash)
		}
	}
	door := HasKind(reasons, "door")
	for _, network := range compose.ServiceNetworks(b.Name, service) {
		if haveNetwork && !door && !contains(c.Networks, network) {
			reasons = append(reasons, Reason{Kind: "disconnected", Service: service, Old: network})
		}
	}
	// Published elsewhere with the configuration unchanged is drift; with
	// it changed, the recreate's own reason says why.
	if service == compose.ExecutorService && c.State == engine.Running && (!h.token() || h.matches(service, c.ConfigHash)) {
		if got, want, ok := publishedDrift(b, c); ok {
			reasons = append(reasons, Reason{Kind: "published", Service: service, Old: got, New: want})
		}
	}
	if c.Image != in.Image {
		if !HasKind(reasons, "image") {
			reasons = append(reasons, Reason{Kind: "image", Old: c.Image, New: in.Image})
		}
		return reasons
	}
	if !h.token() || h.matches(service, c.ConfigHash) || door {
		// A box that gets its gate is remade for that: its one reason.
		return reasons
	}
	return configReasons(reasons, in, b, service, c, h.want[service], named)
}

// configReasons adds the settings that changed in service's container c,
// or its config hash (now, against want) when the settings it records name
// none.
func configReasons(reasons []Reason, in Input, b spec.Box, service string, c Container, want string, named map[string]bool) []Reason {
	changes := compose.SettingsDiff(c.Labels[compose.SettingsLabel], compose.ServiceSettings(b, service))
	if service == compose.GateService {
		machine := machineReasons(in, b, c)
		reasons = append(reasons, machine...)
		switch {
		case len(changes) > 0:
		case in.Unread[b.Name]:
			return reasons
		case len(machine) > 0:
			return append(reasons, credentialReasons(in, b, c)...)
		default:
			if changed := credentialReasons(in, b, c); len(changed) > 0 {
				return append(reasons, changed...)
			}
			if _, recorded := c.Labels[compose.ClosedLabel]; !recorded {
				return append(reasons, Reason{Kind: "machine", Service: service, Field: "unrecorded"})
			}
		}
	}
	if len(changes) == 0 {
		return append(reasons, Reason{Kind: "config", Service: service, Old: c.ConfigHash, New: want})
	}
	for _, ch := range changes {
		if !named[ch.Field] {
			named[ch.Field] = true
			reasons = append(reasons, Reason{Kind: "config", Field: ch.Field, Old: ch.Old, New: ch.New})
		}
	}
	return reasons
}

// volumeReasons adds the volumes box b's containers (resources r) lack; a
// lost data volume is an error, never a silent recreate.
func volumeReasons(reasons []Reason, in Input, b spec.Box, r Resources) ([]Reason, error) {
	for _, vol := range []string{compose.AgentVolume, compose.ExecutorVolume} {
		name := compose.VolumeName(b.Name, vol)
		if hasVolume(r, name) || len(r.Containers) == 0 {
			continue
		}
		switch {
		case vol == compose.ExecutorVolume:
			reasons = append(reasons, Reason{Kind: "volume", Old: name, New: "Executor's scratch space, made again empty"})
		case in.Replace[b.Name]:
			reasons = append(reasons, Reason{Kind: "volume", Old: name, New: "the box starts with an empty /data (--replace)"})
		default:
			// The agent volume is the box: never recreate silently over its loss.
			return nil, &MissingVolumeError{Box: b.Name, Volume: name}
		}
	}
	return reasons, nil
}

// ErrVolumeMissing is a box whose containers exist without its data volume.
var ErrVolumeMissing = errors.New("the box's data volume is missing")

// MissingVolumeError names the box and the volume; a plan stops on it
// rather than recreate the box over an empty /data.
type MissingVolumeError struct{ Box, Volume string }

func (e *MissingVolumeError) Error() string {
	return fmt.Sprintf("volume %s is missing while the containers of box %s exist: recreating would start it with an empty /data (restore it with boxes rm %s then boxes load FILE %s, or pass --replace %s to recreate it empty)",
		e.Volume, e.Box, e.Box, e.Box, e.Box)
}

func (e *MissingVolumeError) Unwrap() error { return ErrVolumeMissing }

// publishedDrift compares where a running executor is published with what
// boxes.yaml declares: the bind address, and the port when it is fixed.
func publishedDrift(b spec.Box, c Container) (got, want string, drift bool) {
	want = hostPort(b.Executor.Bind, "auto")
	if b.Executor.Port != 0 {
		want = hostPort(b.Executor.Bind, strconv.Itoa(b.Executor.Port))
	}
	var seen []string
	ok := len(c.Ports) > 0
	for _, p := range c.Ports {
		if p.ContainerPort != compose.ExecutorPort {
			continue
		}
		seen = append(seen, hostPort(p.HostIP, strconv.Itoa(p.HostPort)))
		if !sameBind(p.HostIP, b.Executor.Bind) || (b.Executor.Port != 0 && p.HostPort != b.Executor.Port) {
			ok = false
		}
	}
	if len(seen) == 0 {
		ok = false
	}
	if ok {
		return "", "", false
	}
	return strings.Join(seen, ", "), want, true
}

// sameBind reports whether Docker's listed host IP is the declared bind: a
// wildcard bind is listed once per address family.
func sameBind(listed, declared string) bool {
	if listed == declared {
		return true
	}
	wild := func(s string) bool { return s == "0.0.0.0" || s == "::" || s == "" }
	return wild(listed) && wild(declared)
}

func hostPort(ip, port string) string {
	if strings.Contains(ip, ":") {
		return "[" + ip + "]:" + port
	}
	return ip + ":" + port
}

// strayNetworks are box's labelled networks that have its network's name,
// but the one it keeps: the one most of its containers are on (the smallest
// ID among equals, so the same snapshot always gives the same plan). An
// engine's duplicate check does not see a create still in flight, so a
// create that follows a killed one can make a second network of the name,
// and then nothing can use the name. onStray are the containers on a stray
// network: they are removed with the strays, and made again on the kept one.
func StrayNetworks(box string, r Resources) (strays []NamedID, onStray map[string]bool) {
	for _, name := range []string{compose.NetworkName(box), compose.InsideNetworkName(box)} {
		s, on := strayNetworksNamed(name, r)
		strays = append(strays, s...)
		for id := range on {
			if onStray == nil {
				onStray = map[string]bool{}
			}
			onStray[id] = true
		}
	}
	return strays, onStray
}

// strayNetworksNamed are the networks of r named name beyond the one kept.
func strayNetworksNamed(name string, r Resources) (strays []NamedID, onStray map[string]bool) {
	var same []Network
	for _, n := range r.Networks {
		if n.Name == name {
			same = append(same, n)
		}
	}
	if len(same) < 2 {
		return nil, nil
	}
	users := map[string]int{}
	for _, c := range r.Containers {
		for _, id := range c.NetworkIDs {
			users[id]++
		}
	}
	sort.Slice(same, func(i, j int) bool {
		if users[same[i].ID] != users[same[j].ID] {
			return users[same[i].ID] > users[same[j].ID]
		}
		return same[i].ID < same[j].ID
	})
	onStray = map[string]bool{}
	for _, n := range same[1:] {
		strays = append(strays, NamedID{Name: n.Name, ID: n.ID})
		for _, c := range r.Containers {
			if contains(c.NetworkIDs, n.ID) {
				onStray[c.ID] = true
			}
		}
	}
	return strays, onStray
}

func countNamed(ids []NamedID, name string) int {
	n := 0
	for _, id := range ids {
		if id.Name == name {
			n++
		}
	}
	return n
}

func hasNetwork(r Resources, name string) bool {
	for _, n := range r.Networks {
		if n.Name == name {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func desiredHashes(in Input, b spec.Box, token string, hostPort int) (map[string]string, error) {
	project, err := compose.Project(compose.Input{
		Box:        b,
		Image:      in.Image,
		Token:      token,
		HostPort:   hostPort,
		WorkDir:    filepath.Dir(in.Config.Path),
		ConfigFile: in.Config.Path,
		Door:       in.Doors[b.Name],
	})
	if err != nil {
		return nil, err
	}
	return compose.ServiceHashes(project)
}

// DeletionOf is the delete of box name's resources r on host, as a plan
// would make it: the applier removes with it what a failed create or
// restore made.
func DeletionOf(host, name string, r Resources) BoxPlan { return planDelete(Input{}, host, name, r) }

func planDelete(in Input, host, name string, r Resources) BoxPlan {
	d := &Deletion{Backup: in.Backups[name], Containers: []NamedID{}, Networks: []NamedID{}, Volumes: []DeletedVolume{}}
	for _, c := range r.Containers {
		d.Containers = append(d.Containers, NamedID{Name: c.Name, ID: c.ID})
	}
	for _, n := range r.Networks {
		d.Networks = append(d.Networks, NamedID{Name: n.Name, ID: n.ID})
	}
	for _, v := range r.Volumes {
		d.Volumes = append(d.Volumes, DeletedVolume{Name: v.Name, Size: -1, Unread: "not measured"})
	}
	why := Reason{Kind: "undeclared"}
	if pool, ok := in.Config.PoolOf(name); ok && pool.Host == host {
		why = Reason{Kind: "pool", Old: pool.Name, New: strconv.Itoa(pool.Size)}
	}
	return BoxPlan{Name: name, Host: host, Action: Delete, Reasons: []Reason{why}, Delete: d}
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
		for _, s := range compose.Services {
			if n := compose.ContainerName(name, s); o.Unmanaged.Containers[n] {
				found = append(found, fmt.Sprintf("container %s on %s (needed by box %s)", n, HostLabel(b.Host), name))
			}
		}
		for _, v := range []string{compose.AgentVolume, compose.ExecutorVolume} {
			if n := compose.VolumeName(name, v); o.Unmanaged.Volumes[n] {
				found = append(found, fmt.Sprintf("volume %s on %s (needed by box %s)", n, HostLabel(b.Host), name))
			}
		}
		for _, n := range []string{compose.NetworkName(name), compose.InsideNetworkName(name)} {
			if o.Unmanaged.Networks[n] {
				found = append(found, fmt.Sprintf("network %s on %s (needed by box %s)", n, HostLabel(b.Host), name))
			}
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

func observedAnywhere(obs map[string]*Observed, fleet, name string) bool {
	for _, o := range obs {
		if r := o.Of(name); r.Owned(fleet) && r.HeldBy(fleet) == "" {
			return true
		}
	}
	return false
}

// ErrHeldByFleet is a declared box whose name another fleet holds on that engine.
var ErrHeldByFleet = errors.New("box name held by another fleet")

// FleetConflictError names each declared box another fleet holds, and where.
type FleetConflictError struct {
	Fleet string
	Boxes []string
}

func (e *FleetConflictError) Error() string {
	return fmt.Sprintf("fleet %s declares boxes that other fleets hold: %s; rename them in boxes.yaml (boxes never touches another fleet's box)", e.Fleet, strings.Join(e.Boxes, "; "))
}

func (e *FleetConflictError) Unwrap() error { return ErrHeldByFleet }

// heldByOtherFleets fails when a targeted declared box's name is held on its
// engine by a box of another fleet.
func heldByOtherFleets(in Input) error {
	var found []string
	for _, b := range in.Config.Boxes {
		o := in.Observed[b.Host]
		if o == nil || !in.targeted(b.Name) {
			continue
		}
		if other := o.Of(b.Name).HeldBy(in.Config.Fleet); other != "" {
			found = append(found, fmt.Sprintf("box %s is fleet %s's on %s", b.Name, other, HostLabel(b.Host)))
		}
	}
	if len(found) == 0 {
		return nil
	}
	return &FleetConflictError{Fleet: in.Config.Fleet, Boxes: found}
}

// observedElsewhere is the first host other than host, in name order, that
// holds box name; the local engine's name is "", hence found.
func observedElsewhere(obs map[string]*Observed, fleet, name, host string) (other string, found bool) {
	hosts := make([]string, 0, len(obs))
	for h := range obs {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		if r := obs[h].Of(name); h != host && !r.Empty() && r.HeldBy(fleet) == "" {
			return h, true
		}
	}
	return "", false
}

func executorHostPort(c Container) int {
	if p, ok := c.Published(compose.ExecutorPort); ok {
		return p.HostPort
	}
	port, _ := strconv.Atoi(c.Labels[compose.HostPortLabel])
	return port
}

func HasKind(rs []Reason, kind string) bool {
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
