package workspace

import (
	"fmt"
	"strings"

	"github.com/hermes-box/boxes/apply"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
)

// ErrUndeclared is the sentinel of a box name boxes.yaml does not declare:
// the applier's own.
var ErrUndeclared = apply.ErrUndeclared

// UndeclaredError names the box and the boxes that are declared.
type UndeclaredError struct {
	Box      string
	File     string
	Declared []string
}

func (e *UndeclaredError) Error() string        { return fmt.Sprintf("no box %q in %s", e.Box, e.File) }
func (e *UndeclaredError) Is(target error) bool { return target == ErrUndeclared }

// Hint names the boxes that are declared.
func (e *UndeclaredError) Hint() string {
	if len(e.Declared) == 0 {
		return "it declares no box yet; add one under boxes:"
	}
	return "declared boxes: " + strings.Join(e.Declared, ", ")
}

// NotRunningError is a box whose container a command needs up is not.
type NotRunningError struct {
	Box, Service string
	State        engine.State
	// Holder is the boxes process changing the box now, if one is.
	Holder string
}

func (e *NotRunningError) Error() string {
	return fmt.Sprintf("box %s: the %s container is %s", e.Box, e.Service, e.State)
}

// Hint is the process changing the box, else the command that starts it.
func (e *NotRunningError) Hint() string {
	if e.Holder != "" {
		return BusyHint(e.Holder)
	}
	return "boxes start " + e.Box
}

// NoContainerError is a declared box without the container a command needs.
type NoContainerError struct {
	Box, Service string
	// Holder is the boxes process changing the box now, if one is.
	Holder string
}

func (e *NoContainerError) Error() string {
	return fmt.Sprintf("box %s has no %s container", e.Box, e.Service)
}

// Hint is the process changing the box, else where to look next.
func (e *NoContainerError) Hint() string {
	if e.Holder != "" {
		return BusyHint(e.Holder)
	}
	return "boxes plan shows what apply would create"
}

// BusyHint is the hint for a box that holder, another boxes process, is changing.
func BusyHint(holder string) string {
	return holder + " is changing the box; run the command again once it is done"
}

type noConfigError struct{ file string }

func (e *noConfigError) Error() string        { return e.file + " not found" }
func (e *noConfigError) Is(target error) bool { return target == ErrNoConfig }
func (e *noConfigError) Hint() string         { return ErrNoConfig.(interface{ Hint() string }).Hint() }

// OtherFleetError is a box another fleet holds on the engine a command
// reached: no command of this fleet touches it.
type OtherFleetError struct {
	Box, Host string
	// Fleet holds the box; Own is the fleet of the command's boxes.yaml.
	Fleet, Own string
}

func (e *OtherFleetError) Error() string {
	return fmt.Sprintf("box %s on %s is fleet %s's, not fleet %s's; nothing was changed", e.Box, reconcile.HostLabel(e.Host), e.Fleet, e.Own)
}

// Hint is where the box can be reached from.
func (e *OtherFleetError) Hint() string {
	return fmt.Sprintf("run it from fleet %s's directory; boxes ls --all lists every fleet's boxes", e.Fleet)
}

func (e *OtherFleetError) Unwrap() error { return reconcile.ErrHeldByFleet }

// NoFleetError is a box made before fleets existed that boxes.yaml does not
// declare: it is no fleet's, and only rm reaches it.
type NoFleetError struct{ Box, Host, File string }

func (e *NoFleetError) Error() string {
	return fmt.Sprintf("box %s on %s belongs to no fleet (it was made before fleets existed) and %s does not declare it; nothing was changed", e.Box, reconcile.HostLabel(e.Host), e.File)
}

// Hint is how to adopt or remove it.
func (e *NoFleetError) Hint() string {
	return fmt.Sprintf("declare %s in boxes.yaml to make it this fleet's, or boxes rm %s to delete it", e.Box, e.Box)
}

// Claim checks that box name's resources r on host are this fleet's to act
// on: none of them another fleet's, and, unless noFleetOK (rm), the box
// either labelled with this fleet or declared by boxes.yaml.
func (w *Workspace) Claim(name, host string, r engine.Resources, noFleetOK bool) error {
	fleet := w.Config.Fleet
	if other := r.HeldBy(fleet); other != "" {
		return &OtherFleetError{Box: name, Host: host, Fleet: other, Own: fleet}
	}
	if r.Empty() || r.Owned(fleet) || noFleetOK {
		return nil
	}
	if _, declared := w.Config.Box(name); declared {
		return nil
	}
	return &NoFleetError{Box: name, Host: host, File: w.opts.Shown(w.Path)}
}

// NoFleet reports whether box name's resources r carry no fleet's label
// and boxes.yaml does not declare it: a box made before fleets existed.
func (w *Workspace) NoFleet(name string, r engine.Resources) bool {
	_, declared := w.Config.Box(name)
	return !declared && !r.Empty() && len(r.Fleets()) == 0
}
