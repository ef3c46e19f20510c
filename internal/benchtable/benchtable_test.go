package benchtable

import "testing"

func TestLine(t *testing.T) {
	r := Row{Figure: "plan,\t10 boxes", Value: 0.25, Unit: "s", Baseline: "plan, 1 box", Base: 0.1}
	want := "BENCHROW\tplan, 10 boxes\t0.25\ts\tplan, 1 box\t0.1\t2.500"
	if got := r.Line(); got != want {
		t.Fatalf("Line() = %q, want %q", got, want)
	}
	if got := (Row{Value: 3}).Ratio(); got != 0 {
		t.Fatalf("ratio without a baseline = %v, want 0", got)
	}
}
