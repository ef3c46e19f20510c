package workspace

import (
	"fmt"
	"strings"

	"github.com/hermes-box/boxes/reconcile"
)

// ErrUndeclared is the sentinel of a box name boxes.yaml does not declare:
// the applier's own.
var ErrUndeclared = reconcile.ErrUndeclared

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
	Box, Service, State string
}

func (e *NotRunningError) Error() string {
	return fmt.Sprintf("box %s: the %s container is %s", e.Box, e.Service, e.State)
}

// Hint is the command that starts it.
func (e *NotRunningError) Hint() string { return "boxes start " + e.Box }

// NoContainerError is a declared box without the container a command needs.
type NoContainerError struct {
	Box, Service string
}

func (e *NoContainerError) Error() string {
	return fmt.Sprintf("box %s has no %s container", e.Box, e.Service)
}

// Hint is where to look next.
func (e *NoContainerError) Hint() string { return "boxes plan shows what apply would create" }

type noConfigError struct{ file string }

func (e *noConfigError) Error() string        { return e.file + " not found" }
func (e *noConfigError) Is(target error) bool { return target == ErrNoConfig }
func (e *noConfigError) Hint() string         { return ErrNoConfig.(interface{ Hint() string }).Hint() }
