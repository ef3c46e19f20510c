package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/spec"
)

// Move is the action for a box whose host: changed: its data is carried to
// the new host through an archive, and the old copy deleted once confirmed.
const Move Action = "move"

// MoveStage is how far a move has come, as the plan finds it.
type MoveStage string

const (
	// MoveSave: nothing is done yet (or the save was cut short): stop the
	// old copy, save it, then everything below.
	MoveSave MoveStage = "save"
	// MoveRestore: the archive is saved and verified; create the box on
	// the new host, restore, check and doctor it, then delete the old copy.
	MoveRestore MoveStage = "restore"
	// MoveDeleteOld: the new copy is verified; only the old copy's delete
	// is left, which needs the same confirmation as any delete.
	MoveDeleteOld MoveStage = "delete-old"
	// MoveCancel: a move cut short before its new copy was verified was
	// put back (host: changed back): remove that unverified copy, and
	// start the original again if it is declared running.
	MoveCancel MoveStage = "cancel"
)

// Moving is what a move carries beyond the box plan: where from, where to,
// how far it has come, and what it removes.
type Moving struct {
	From  string    `json:"from"`
	To    string    `json:"to"`
	Stage MoveStage `json:"stage"`
	// Size is the old copy's /data volume size in bytes, -1 when unknown;
	// Unread says why it could not be read.
	Size   int64  `json:"data_size"`
	Unread string `json:"data_size_unread,omitempty"`
	// Archive is the move's archive once saved (relative to boxes.yaml's directory).
	Archive string `json:"archive,omitempty"`
	// Old is the old copy: deleted last, and only once the new copy is verified.
	Old *Deletion `json:"old"`
	// Unverified is a copy that is not the box, removed before anything
	// else: on the new host, one left by a move cut short before it was
	// verified (or, for a move put back, the stopped original the new
	// archive replaces); for MoveCancel, the unverified copy on From.
	Unverified *Deletion `json:"unverified,omitempty"`
	// OldRunning is an old copy that runs again after its save: it may hold
	// changes the archive lacks, so it is not deleted.
	OldRunning bool `json:"old_running,omitempty"`
}

// imageSource is the first host, in name order, observed to hold the image.
func imageSource(in Input) (string, bool) {
	hosts := make([]string, 0, len(in.Observed))
	for h := range in.Observed {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		if in.Observed[h].Images[in.Image] {
			return h, true
		}
	}
	return "", false
}

// ErrTwoCopies is a box found on two hosts with no move of it recorded here.
var ErrTwoCopies = errors.New("box found on two hosts with no move recorded")

// planMove plans declared box b found on host old: a move, at the stage
// the observed copies and the move's record show.
func planMove(in Input, b spec.Box, old string) (BoxPlan, error) {
	for h, o := range in.Observed {
		if h != old && h != b.Host && !o.Of(b.Name).Empty() && o.Of(b.Name).HeldBy(in.Config.Fleet) == "" {
			return BoxPlan{}, fmt.Errorf("box %s exists on %s and on %s: keep one copy (boxes.yaml declares it on %s)", b.Name, HostLabel(old), HostLabel(h), HostLabel(b.Host))
		}
	}
	oldR := in.Observed[old].Of(b.Name)
	var newR engine.Resources
	if o := in.Observed[b.Host]; o != nil {
		newR = o.Of(b.Name)
	}
	m := &Moving{From: old, To: b.Host, Size: -1, Unread: "not measured", Stage: MoveSave,
		Old: planDelete(in, old, b.Name, oldR).Delete, OldRunning: anyRunning(oldR)}
	rec, found := in.Moves[b.Name]
	ok := found && rec.From == old && rec.To == b.Host
	// A move from here to old that boxes.yaml has put back.
	putBack := found && rec.From == b.Host && rec.To == old && !newR.Empty()
	switch {
	case putBack && !rec.Verified:
		// The copy on old never ran as the box: the one here is the box.
		m.Stage, m.Old, m.Unverified = MoveCancel, nil, planDelete(in, old, b.Name, oldR).Delete
		m.Archive = rec.Archive
	case putBack:
		// The copy on old is verified and may have run since: it is the
		// box, and goes back; the stopped one here is in the archive.
		m.Unverified = planDelete(in, b.Host, b.Name, newR).Delete
		m.Archive = rec.Archive
	case !newR.Empty() && !ok:
		return BoxPlan{}, fmt.Errorf("%w: box %s exists on %s and on %s, and no move of it is recorded in .boxes/moves; keep the copy you want and remove the other (boxes.yaml declares it on %s)",
			ErrTwoCopies, b.Name, HostLabel(old), HostLabel(b.Host), HostLabel(b.Host))
	case !newR.Empty() && rec.Verified:
		m.Stage = MoveDeleteOld
	case !newR.Empty():
		m.Unverified = planDelete(in, b.Host, b.Name, newR).Delete
		if rec.Saved && !m.OldRunning {
			m.Stage = MoveRestore
		}
	case ok && rec.Saved && !m.OldRunning:
		// A saved archive still holds the old copy only while it stays stopped.
		m.Stage = MoveRestore
	}
	if m.Stage == MoveRestore || m.Stage == MoveDeleteOld {
		m.Archive = rec.Archive
		m.Size, m.Unread = rec.Bytes, ""
	}
	bp := BoxPlan{Name: b.Name, Host: b.Host, Action: Move, State: b.State, Move: m,
		Reasons: []Reason{{Kind: "move", Old: old, New: b.Host}, {Kind: "move-" + string(m.Stage), Old: old, New: b.Host}}}
	switch {
	case m.Stage == MoveSave && putBack:
		bp.Reasons[1].Field = "putback"
	case m.Stage == MoveSave && ok && !rec.Saved && m.Unverified == nil:
		bp.Reasons[1].Field = "again"
	}
	return bp, nil
}

// moveTitle heads a move in a plan: from where to where.
func (b BoxPlan) moveTitle() string {
	return fmt.Sprintf("will be moved from %s to %s", HostName(b.Move.From), HostName(b.Move.To))
}

// HostName is a host as plans and prompts print it: "local" is the local engine.
func HostName(h string) string {
	if h == "" {
		return "local"
	}
	return h
}

func moveReason(r Reason) (string, bool) {
	switch r.Kind {
	case "move":
		return fmt.Sprintf("host: %s → %s", HostName(r.Old), HostName(r.New)), true
	case "move-save":
		if r.Field == "putback" {
			return fmt.Sprintf("the move from %s to %s was put back after its new copy was verified: that copy, which may have run since, is saved and moved back here; the stopped copy on %s is replaced (its data stays in the first move's archive)", HostName(r.New), HostName(r.Old), HostName(r.New)), true
		}
		if r.Field == "again" {
			return fmt.Sprintf("move in progress: the save was cut short; stop the box on %s, save /data again, create it on %s, restore and check it, doctor; then delete the old copy (with confirmation)", HostName(r.Old), HostName(r.New)), true
		}
		return fmt.Sprintf("stop the box on %s, save /data to an archive, create it on %s, restore and check it, doctor; then delete the old copy (with confirmation)", HostName(r.Old), HostName(r.New)), true
	case "move-restore":
		return fmt.Sprintf("move in progress: the archive is saved; create the box on %s, restore and check it, doctor; then delete the old copy (with confirmation)", HostName(r.New)), true
	case "move-cancel":
		return fmt.Sprintf("the move from %s to %s was put back before its new copy was verified: remove that copy on %s; the copy here is the box", HostName(r.New), HostName(r.Old), HostName(r.Old)), true
	case "move-delete-old":
		return fmt.Sprintf("move in progress: the copy on %s is verified; delete the old copy on %s (needs --confirm-delete or the typed name)", HostName(r.New), HostName(r.Old)), true
	}
	return "", false
}

// lines are the move's details as plans print them.
func (m *Moving) lines() []string {
	size := HumanSize(m.Size)
	if m.Size < 0 && m.Unread != "" {
		size = "size not read: " + m.Unread
	}
	out := []string{fmt.Sprintf("data: %s (/data on %s)", size, HostName(m.From))}
	if m.Archive != "" {
		out = append(out, "archive: "+m.Archive)
	}
	switch {
	case m.Unverified != nil && m.Stage == MoveCancel:
		out = append(out, fmt.Sprintf("remove the unverified copy on %s", HostName(m.From)))
	case m.Unverified != nil && m.Stage == MoveSave:
		out = append(out, fmt.Sprintf("replace the stopped copy on %s", HostName(m.To)))
	case m.Unverified != nil:
		out = append(out, fmt.Sprintf("remove the unverified copy on %s left by the interrupted move, then restore again", HostName(m.To)))
	}
	if m.OldRunning && m.Stage != MoveSave {
		out = append(out, fmt.Sprintf("warning: the old copy on %s is running; its changes since the move began are not in the archive", HostName(m.From)))
	}
	return out
}

// note is the move as a GitHub alert for a pull-request comment.
func (m *Moving) note(box string) string {
	size := HumanSize(m.Size)
	if m.Size < 0 {
		size = "size not measured"
	}
	return fmt.Sprintf("\n> [!NOTE]\n> **Box `%s` moves from %s to %s with its data** (%s). The old copy is deleted only after the new one is verified, and only with `--confirm-delete %s` or the typed name; until then it stays, stopped.\n",
		box, HostName(m.From), HostName(m.To), size, box)
}

// Moves are the names of the boxes the plan moves.
func (p *Plan) Moves() []string {
	var names []string
	for _, b := range p.Boxes {
		if b.Action == Move {
			names = append(names, b.Name)
		}
	}
	return names
}

// MeasureMoves starts measuring the agent volume of every box in p that a
// move still has to save, and returns a function that waits for the sizes.
func MeasureMoves(ctx context.Context, in Input, p *Plan, sizer func(host string) engine.VolumeSizer) func() Sizes {
	byHost := map[string][]string{}
	for _, b := range p.Boxes {
		if b.Action == Move && b.Move != nil && b.Move.Stage == MoveSave {
			byHost[b.Move.From] = append(byHost[b.Move.From], compose.VolumeName(b.Name, compose.AgentVolume))
		}
	}
	done := make(chan Sizes, 1)
	go func() {
		sizes := Sizes{}
		for host, vols := range byHost {
			s, o := sizer(host), in.Observed[host]
			if s == nil || o == nil {
				continue
			}
			sort.Strings(vols)
			sizes[host] = s.VolumeSizes(ctx, o, vols)
		}
		done <- sizes
	}()
	return func() Sizes { return <-done }
}

// SetMoveSizes writes measured sizes into the plan's moves.
func (p *Plan) SetMoveSizes(sizes Sizes) {
	for _, b := range p.Boxes {
		if b.Action != Move || b.Move == nil || b.Move.Stage != MoveSave {
			continue
		}
		got, ok := sizes[b.Move.From][compose.VolumeName(b.Name, compose.AgentVolume)]
		switch {
		case !ok:
		case got.Unread != "":
			b.Move.Size, b.Move.Unread = -1, got.Unread
		default:
			b.Move.Size, b.Move.Unread = got.Bytes, ""
		}
	}
}
