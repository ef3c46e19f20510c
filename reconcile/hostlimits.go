package reconcile

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/internal/text"
	"github.com/hermes-box/boxes/spec"
)

// ErrOverHost is a box that asks for more CPUs or memory than its host has.
var ErrOverHost = hint.New("a box asks for more than its host has", "lower its cpus: or memory: in boxes.yaml, or give it a larger host (host:)")

// OverHostError names each box that asks for more than its host has, with
// where the value is written and what the host has.
type OverHostError struct{ Boxes []string }

func (e *OverHostError) Error() string { return strings.Join(e.Boxes, "; ") }

func (e *OverHostError) Unwrap() error { return ErrOverHost }

// OverHost checks the boxes a plan creates, recreates, starts or moves
// against their host's CPUs and memory, where the snapshot knows them. The
// engine refuses more CPUs than its machine has, at create and at every
// start, after the network and volumes exist; a memory limit above the
// machine's limits nothing. A box left as it is, running, is not checked:
// the plan does not touch it. NewPlan checks its plans; a one-box plan
// made without it (load's) is checked the same.
func OverHost(cfg *spec.Config, observed map[string]*engine.Observed, boxes []BoxPlan) error {
	found := eachChanged(cfg, observed, boxes, func(b spec.Box, o *engine.Observed) (found []string) {
		if o.CPUs > 0 && b.CPUs > float64(o.CPUs) {
			found = append(found, fmt.Sprintf("box %s asks for cpus: %s%s, but %s has %s",
				b.Name, strconv.FormatFloat(b.CPUs, 'f', -1, 64), at(b.CPUsAt), HostLabel(b.Host), text.Plural(o.CPUs, "CPU", "CPUs")))
		}
		if o.Memory > 0 && b.Memory > o.Memory {
			found = append(found, fmt.Sprintf("box %s asks for memory: %s%s, but %s has %s",
				b.Name, compose.FormatSize(b.Memory), at(b.MemoryAt), HostLabel(b.Host), text.Size(o.Memory)))
		}
		return found
	})
	if len(found) == 0 {
		return nil
	}
	return &OverHostError{Boxes: found}
}

// eachChanged runs check on each box of boxes that the plan creates,
// recreates, starts or moves, with the snapshot of its host where there is
// one, and gathers what the checks found.
func eachChanged(cfg *spec.Config, observed map[string]*engine.Observed, boxes []BoxPlan, check func(spec.Box, *engine.Observed) []string) []string {
	var found []string
	for _, bp := range boxes {
		switch bp.Action {
		case Create, Recreate, Start, Move:
		default:
			continue
		}
		b, ok := cfg.Box(bp.Name)
		if o := observed[b.Host]; ok && o != nil {
			found = append(found, check(b, o)...)
		}
	}
	return found
}

// at is " (boxes.yaml:7:11)", or nothing for a value whose place is not known.
func at(p spec.Pos) string {
	if p.Line == 0 {
		return ""
	}
	return " (" + p.String() + ")"
}
