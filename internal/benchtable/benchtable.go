// Package benchtable records a benchmark's figures as rows of the one table
// that make bench prints: each row a figure, its baseline measured in the
// same run, and their ratio. Rows are written to standard output as
// tab-separated lines that begin with "BENCHROW"; scripts/bench.sh gathers
// them from every package's output into a table.
package benchtable

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// Prefix starts every row line.
const Prefix = "BENCHROW"

// Row is one figure of the table.
type Row struct {
	Figure   string  // what was measured, e.g. "plan, 10 boxes"
	Value    float64 // the figure
	Unit     string  // its unit, e.g. "s", "calls", "MiB"
	Baseline string  // what it is compared with, e.g. "plan, 1 box"
	Base     float64 // the baseline's figure, in the same unit
}

// Ratio is Value over Base, or 0 when there is no baseline.
func (r Row) Ratio() float64 {
	if r.Base == 0 {
		return 0
	}
	return r.Value / r.Base
}

// Line is the row as scripts/bench.sh reads it.
func (r Row) Line() string {
	clean := func(s string) string { return strings.NewReplacer("\t", " ", "\n", " ").Replace(s) }
	return fmt.Sprintf("%s\t%s\t%.4g\t%s\t%s\t%.4g\t%.3f", Prefix, clean(r.Figure), r.Value, clean(r.Unit), clean(r.Baseline), r.Base, r.Ratio())
}

// Report writes the row for the table and also reports it as the
// benchmark's metrics, so plain go test -bench output carries it too.
func Report(b testing.TB, r Row) {
	b.Helper()
	fmt.Fprintln(os.Stdout, r.Line())
	if bb, ok := b.(*testing.B); ok && r.Base != 0 {
		bb.ReportMetric(r.Ratio(), "ratio")
	}
}
