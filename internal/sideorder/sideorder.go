// Package sideorder helps tests read a log of calls in which one call runs
// beside the others from the start, so that its place among them is the
// scheduler's.
package sideorder

import "slices"

// Before is calls with side moved to just before anchor, when side came
// before anchor at all; otherwise calls unchanged (so a side call made
// after the anchor, or missing, still shows in a failed comparison).
func Before(calls []string, side, anchor string) []string {
	i, j := slices.Index(calls, side), slices.Index(calls, anchor)
	if i < 0 || j < 0 || i > j {
		return calls
	}
	out := slices.Delete(slices.Clone(calls), i, i+1)
	return slices.Insert(out, j-1, side)
}
