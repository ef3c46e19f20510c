// Package reconcile decides what to do to each box: the pure NewPlan that
// compares what the engines observed (package engine's Observed) with
// boxes.yaml and boxes.lock, the plan's renderings, saved plans, and the
// .boxes/ state directory with its records. Package apply carries a plan out.
package reconcile
