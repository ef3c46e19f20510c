package reconcile

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/spec"
)

// ErrNoRuntime is a box whose runtime: its host's engine does not have.
var ErrNoRuntime = hint.New("a box asks for a runtime its host does not have",
	`register it in that engine's daemon configuration ("runtimes" in daemon.json, e.g. runsc for gVisor) and reload the engine, or give the box a host that has it (host:)`)

// NoRuntimeError names each box whose runtime its host lacks, with where
// runtime: is written and the runtimes the host has.
type NoRuntimeError struct{ Boxes []string }

func (e *NoRuntimeError) Error() string { return strings.Join(e.Boxes, "; ") }

func (e *NoRuntimeError) Unwrap() error { return ErrNoRuntime }

// MissingRuntime checks the boxes a plan creates, recreates, starts or
// moves against the runtimes their host's engine has, where the snapshot
// knows them. The engine refuses a runtime it lacks only when it creates
// the containers, after the box's network and volumes exist. A box left
// as it is is not checked: the plan does not touch it. NewPlan checks its
// plans; a one-box plan made without it (load's) is checked the same.
func MissingRuntime(cfg *spec.Config, observed map[string]*engine.Observed, boxes []BoxPlan) error {
	found := eachChanged(cfg, observed, boxes, func(b spec.Box, o *engine.Observed) []string {
		if o.Runtimes == nil || b.Runtime == "" || slices.Contains(o.Runtimes, b.Runtime) {
			return nil
		}
		return []string{fmt.Sprintf("box %s asks for runtime: %s%s, but %s has only %s",
			b.Name, b.Runtime, at(b.RuntimeAt), HostLabel(b.Host), strings.Join(o.Runtimes, ", "))}
	})
	if len(found) == 0 {
		return nil
	}
	return &NoRuntimeError{Boxes: found}
}
