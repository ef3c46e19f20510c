// Package reconcile decides what to do to each box: the pure NewPlan that
// compares what the engines observed (package engine's Observed) with
// boxes.yaml and boxes.lock, the plan's renderings, saved plans, and the
// .boxes/ state directory with its records. Package apply carries a plan out.
package reconcile

import "github.com/hermes-box/boxes/engine"

// The planner reads what an engine observed under these names: the
// contract's types (package engine), which the plan's records embed.
type (
	Observed  = engine.Observed
	Unmanaged = engine.Unmanaged
	Container = engine.Container
	Mount     = engine.Mount
	Port      = engine.Port
	Volume    = engine.Volume
	Snapshot  = engine.Snapshot
	Network   = engine.Network
	Resources = engine.Resources
	LeaseMark = engine.LeaseMark
	Lease     = engine.Lease
)
