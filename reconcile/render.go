package reconcile

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/hermes-box/boxes/spec"

	"github.com/hermes-box/boxes/internal/text"
)

// FormatVersion is the version of the JSON plan schema; bump it on any
// incompatible change. 2: format_version is a number, as in every other
// --json document of boxes (1 had the string "1"); the rest is 1's.
const FormatVersion = 2

var symbols = map[Action]string{
	Create:   "+",
	Recreate: "-/+",
	Start:    "~",
	Stop:     "~",
	Delete:   "-",
	Move:     ">",
}

var legendText = map[Action]string{
	Create:   "create",
	Recreate: "recreate (containers replaced, volumes kept)",
	Start:    "start or stop",
	Stop:     "start or stop",
	Delete:   "delete (containers, networks and volumes)",
	Move:     "move to another host (data carried over; the old copy deleted once confirmed)",
}

var headline = map[Action]string{
	Create:   "will be created",
	Recreate: "must be replaced",
	Start:    "will be started",
	Stop:     "will be stopped",
	Delete:   "will be deleted, with its data",
	Move:     "will be moved",
}

const (
	green  = "\x1b[32m"
	yellow = "\x1b[33m"
	red    = "\x1b[31m"
	bold   = "\x1b[1m"
	reset  = "\x1b[0m"
)

var colours = map[Action]string{Create: green, Recreate: yellow, Start: yellow, Stop: yellow, Delete: red, Move: yellow}

// SummaryLine is "Plan: 1 to create, 1 to recreate, 0 to start, 0 to stop, 1 to delete."
func (p *Plan) SummaryLine() string {
	if !p.Changes() {
		return "No changes."
	}
	s := p.Summary()
	moves := ""
	if s.Move > 0 {
		moves = fmt.Sprintf(", %d to move", s.Move)
	}
	if s.Stream > 0 {
		moves += ", " + text.Plural(s.Stream, "image", "images") + " to stream"
	}
	if s.Pull > 0 {
		moves += ", " + text.Plural(s.Pull, "image", "images") + " to pull"
	}
	return fmt.Sprintf("Plan: %d to create, %d to recreate, %d to start, %d to stop, %d to delete%s.",
		s.Create, s.Recreate, s.Start, s.Stop, s.Delete, moves)
}

// RenderText writes the plan the way people read it in a terminal; colour only when asked.
func (p *Plan) RenderText(w io.Writer, colour bool) {
	paint := func(a Action, s string) string {
		c, ok := colours[a]
		if !colour || !ok {
			return s
		}
		return c + s + reset
	}
	if len(p.Target) > 0 {
		fmt.Fprintf(w, "Note: this plan is limited to --target %s; other boxes were not looked at.\n\n", strings.Join(p.Target, ", "))
	}
	if !p.Changes() {
		fmt.Fprintln(w, "No changes. Every box matches boxes.yaml and boxes.lock.")
		p.renderPools(w)
		return
	}
	fmt.Fprintln(w, "Box actions are indicated with the following symbols:")
	seen := map[string]bool{}
	for _, a := range []Action{Create, Recreate, Start, Stop, Delete, Move} {
		if p.count(a) == 0 || seen[legendText[a]] {
			continue
		}
		seen[legendText[a]] = true
		fmt.Fprintf(w, "  %s %s\n", paint(a, fmt.Sprintf("%3s", symbols[a])), legendText[a])
	}
	fmt.Fprintln(w, "\nboxes will perform the following actions:")
	for _, t := range p.Images {
		fmt.Fprintf(w, "\n  # %s\n", t)
	}
	for _, b := range p.Boxes {
		if b.Action == NoOp {
			continue
		}
		fmt.Fprintln(w)
		title := fmt.Sprintf("  # %s %s", b.Name, headline[b.Action])
		switch {
		case b.GateOnly && b.Action == Start:
			title = fmt.Sprintf("  # %s's gate will be started: the agent keeps running", b.Name)
		case b.GateOnly:
			title = fmt.Sprintf("  # %s's gate must be replaced: the agent keeps running", b.Name)
		case b.ExecutorAndGate:
			title = fmt.Sprintf("  # %s's executor and gate must be replaced: the agent keeps running", b.Name)
		}
		switch {
		case b.Move != nil:
			title = fmt.Sprintf("  # %s %s", b.Name, b.moveTitle())
		case b.Host != "":
			title += " on host " + b.Host
		}
		if colour {
			title = bold + title + reset
		}
		fmt.Fprintln(w, title)
		fmt.Fprintf(w, "%s box %q\n", paint(b.Action, fmt.Sprintf("%3s", symbols[b.Action])), b.Name)
		for _, r := range b.Reasons {
			line := "      " + r.String()
			if b.Action == Recreate && forcesReplacement[r.Kind] && !b.GateOnly && !b.ExecutorAndGate {
				line += " # forces replacement"
			}
			fmt.Fprintln(w, line)
		}
		if d := b.Door; d != nil {
			for _, line := range d.lines() {
				fmt.Fprintf(w, "      %s %s\n", paint(Create, "+"), line)
			}
		}
		if d := b.Delete; d != nil {
			for _, line := range d.lines() {
				fmt.Fprintf(w, "      %s %s\n", paint(Delete, "-"), line)
			}
			fmt.Fprintf(w, "      backup: %s\n", d.backupText())
		}
		if m := b.Move; m != nil {
			for _, line := range m.lines() {
				fmt.Fprintf(w, "      %s\n", line)
			}
		}
	}
	if len(p.Pools) > 0 || len(p.LeasedKept) > 0 {
		fmt.Fprintln(w)
		p.renderPools(w)
	}
	summary := p.SummaryLine()
	if colour {
		summary = bold + summary + reset
	}
	fmt.Fprintf(w, "\n%s\n", summary)
}

// forcesReplacement are the reasons that are a changed attribute (Terraform's
// "# forces replacement"), rather than a box found broken.
var forcesReplacement = map[string]bool{"image": true, "config": true, "token": true, "published": true}

func (p *Plan) count(a Action) int {
	n := 0
	for _, b := range p.Boxes {
		if b.Action == a {
			n++
		}
	}
	return n
}

func (d *Deletion) lines() []string {
	var out []string
	for _, c := range d.Containers {
		out = append(out, "container "+c.Name)
	}
	for _, n := range d.Networks {
		out = append(out, "network "+n.Name)
	}
	for _, v := range d.Volumes {
		size := HumanSize(v.Size)
		if v.Size < 0 && v.Unread != "" {
			size = "size not read: " + v.Unread
		}
		out = append(out, fmt.Sprintf("volume %s (%s)", v.Name, size))
	}
	return out
}

func (d *Deletion) backupText() string {
	if d.BackupUnknown && d.Backup == "" {
		return "not looked for (no engine)"
	}
	return BackupText(d.Backup)
}

// BackupText names a box's newest backup as plans and rm print it.
func BackupText(backup string) string {
	if backup == "" {
		return "no backup found"
	}
	return backup
}

// HumanSize is n bytes the way people read them: 512 B, 1.5 MiB; a negative n is unknown.
func HumanSize(n int64) string { return text.Size(n) }

// JSONPlan is the documented, versioned machine form of a plan.
type JSONPlan struct {
	FormatVersion int       `json:"format_version"`
	Image         string    `json:"image"`
	Target        []string  `json:"target"`
	Changes       bool      `json:"changes"`
	Boxes         []JSONBox `json:"boxes"`
	// Images bring the image to the hosts that lack it, before their boxes.
	Images []ImageTransfer `json:"images"`
	// Pools are what the plan does to each pool; absent without pools.
	Pools []PoolPlan `json:"pools,omitempty"`
	// LeasedKept are the leased boxes no longer declared, kept until their
	// lease ends.
	LeasedKept []string `json:"leased_kept,omitempty"`
	Summary    Summary  `json:"summary"`
}

// JSONBox is one box in a JSONPlan. Actions follows Terraform: a recreate is
// ["delete","create"] of its containers, so a script scanning for "delete"
// must also look at the box's action.
type JSONBox struct {
	Name    string   `json:"name"`
	Host    string   `json:"host"`
	Action  Action   `json:"action"`
	Actions []string `json:"actions"`
	Reasons []string `json:"reasons"`
	Causes  []Reason `json:"causes"`
	// State is the declared state, running or stopped; absent for a delete.
	State spec.State `json:"state,omitempty"`
	// Restore is the archive a create is seeded from, when boxes.yaml names one.
	Restore string `json:"restore,omitempty"`
	// From is the box, or snapshot of it (BOX@LABEL), a create is seeded from.
	From   string    `json:"from,omitempty"`
	Delete *Deletion `json:"delete,omitempty"`
	// Move is where a move goes from and to, and how far it has come.
	Move *Moving `json:"move,omitempty"`
	// GateOnly is a recreate or a start of the gate alone: the agent keeps
	// running.
	GateOnly bool `json:"gate_only,omitempty"`
	// ExecutorAndGate is a recreate of the executor and the gate alone:
	// the agent keeps running.
	ExecutorAndGate bool `json:"executor_and_gate,omitempty"`
	// Door is what a box being created may reach through its gate.
	Door *Door `json:"door,omitempty"`
}

// JSON is the plan in its machine form.
func (p *Plan) JSON() JSONPlan {
	out := JSONPlan{FormatVersion: FormatVersion, Image: p.Image, Target: p.Target, Changes: p.Changes(), Summary: p.Summary(), Boxes: []JSONBox{}}
	if out.Target == nil {
		out.Target = []string{}
	}
	out.Images = append([]ImageTransfer{}, p.Images...)
	out.Pools = p.Pools
	out.LeasedKept = p.LeasedKept
	for _, b := range p.Boxes {
		jb := JSONBox{Name: b.Name, Host: b.Host, Action: b.Action, Reasons: []string{}, Causes: b.Reasons, State: b.State, Restore: b.Restore, From: b.From, Delete: b.Delete, Move: b.Move, GateOnly: b.GateOnly, ExecutorAndGate: b.ExecutorAndGate, Door: b.Door}
		if jb.Causes == nil {
			jb.Causes = []Reason{}
		}
		for _, r := range b.Reasons {
			jb.Reasons = append(jb.Reasons, r.String())
		}
		switch b.Action {
		case Recreate:
			jb.Actions = []string{"delete", "create"}
			if b.GateOnly || b.ExecutorAndGate {
				jb.Actions = []string{"update"}
			}
		case Start, Stop:
			jb.Actions = []string{"update"}
		case NoOp:
			jb.Actions = []string{"no-op"}
		case Move:
			// The old copy is deleted at the end of every move, once confirmed.
			jb.Actions = []string{"create", "delete"}
			if b.Move != nil && b.Move.Stage == MoveDeleteOld {
				jb.Actions = []string{"delete"}
			}
		default:
			jb.Actions = []string{string(b.Action)}
		}
		out.Boxes = append(out.Boxes, jb)
	}
	return out
}

// RenderJSON writes the plan as indented JSON.
func (p *Plan) RenderJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p.JSON())
}

// RenderMarkdown writes the plan for a pull-request comment: the summary line,
// then the details folded in a diff fence so GitHub colours + and -.
func (p *Plan) RenderMarkdown(w io.Writer) {
	fmt.Fprintf(w, "**boxes plan:** %s\n", p.SummaryLine())
	if len(p.Target) > 0 {
		fmt.Fprintf(w, "\n_Limited to --target %s._\n", strings.Join(p.Target, ", "))
	}
	if !p.Changes() {
		return
	}
	fmt.Fprint(w, "\n<details><summary>Show plan</summary>\n\n```diff\n")
	for _, t := range p.Images {
		fmt.Fprintf(w, "# %s\n", t)
	}
	for _, b := range p.Boxes {
		if b.Action == NoOp {
			continue
		}
		where := ""
		if b.Host != "" {
			where = " (host " + b.Host + ")"
		}
		fmt.Fprintf(w, "%s %s %s%s\n", symbols[b.Action], b.Action, b.Name, where)
		for _, r := range b.Reasons {
			fmt.Fprintf(w, "#     %s\n", r.String())
		}
		if d := b.Door; d != nil {
			for _, line := range d.lines() {
				fmt.Fprintf(w, "+     %s\n", line)
			}
		}
		if d := b.Delete; d != nil {
			for _, line := range d.lines() {
				fmt.Fprintf(w, "-     %s\n", line)
			}
			fmt.Fprintf(w, "#     backup: %s\n", d.backupText())
		}
		if m := b.Move; m != nil {
			for _, line := range m.lines() {
				fmt.Fprintf(w, "#     %s\n", line)
			}
		}
	}
	fmt.Fprint(w, "```\n\n</details>\n")
}

// ExecutorURL is the URL a box's Executor answers on from its host (no token).
func ExecutorURL(bind string, port int) string {
	if port == 0 {
		return ""
	}
	host := bind
	switch bind {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return fmt.Sprintf("http://%s:%d", host, port)
}

// renderPools writes one line per pool of the plan.
func (p *Plan) renderPools(w io.Writer) {
	for _, pp := range p.Pools {
		fmt.Fprintf(w, "  %s\n", pp)
	}
	for _, name := range p.LeasedKept {
		fmt.Fprintf(w, "  %s is leased and no longer declared: it is deleted when its lease ends\n", name)
	}
}
