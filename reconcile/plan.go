package reconcile

import (
	"errors"
	"fmt"
	"slices"
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
	// ExecutorAndGate is a recreate of the executor and the gate alone
	// (the executor's door given or taken away): the agent keeps running.
	ExecutorAndGate bool `json:"executor_and_gate,omitempty"`
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
	// Door is what a box being created may reach; nil otherwise.
	Door *Door `json:"door,omitempty"`
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
	Observed map[string]*engine.Observed
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
	// statedir.Freezes.Stale).
	Frozen map[string]bool
	// Restoring holds the restores cut short, by box (see statedir.Restores).
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
