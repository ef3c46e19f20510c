package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hermes-box/boxes/internal/benchtable"
)

// BenchmarkPlanWithDelete measures boxes plan, the command as a user runs
// it, on one engine holding three running boxes: fleet it-bench-a declares
// one of its two boxes (the other is a delete, whose volumes the plan
// sizes), fleet it-bench-b declares its one box. Both plans observe the same
// engine and plan one declared box; only the delete differs. Alternated, so
// both figures come from the same minutes of the same engine.
func BenchmarkPlanWithDelete(b *testing.B) {
	if testing.Short() {
		b.Skip("real Docker engine")
	}
	const keep, gone, other = "it-bench-keep", "it-bench-gone", "it-bench-other"
	removeBoxes(keep, gone, other)
	b.Cleanup(func() { removeBoxes(keep, gone, other) })
	image := os.Getenv("BOXES_TEST_IMAGE")
	if image == "" {
		image = "hermes-box-lite:test"
	}
	dirA, dirB := b.TempDir(), b.TempDir()
	write := func(dir, content string) {
		if err := os.WriteFile(filepath.Join(dir, "boxes.yaml"), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cli := func(dir string, args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := Main(Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, append([]string{"-f", filepath.Join(dir, "boxes.yaml")}, args...))
		return code, out.String() + errb.String()
	}
	write(dirA, "version: 1\nfleet: it-bench-a\nboxes:\n  "+keep+": {}\n  "+gone+": {}\n")
	write(dirB, "version: 1\nfleet: it-bench-b\nboxes:\n  "+other+": {}\n")
	for _, dir := range []string{dirA, dirB} {
		if code, out := cli(dir, "lock", "image", image); code != 0 {
			b.Fatal(out)
		}
		if code, out := cli(dir, "apply", "--auto-approve"); code != 0 {
			b.Fatal(out)
		}
	}
	write(dirA, "version: 1\nfleet: it-bench-a\nboxes:\n  "+keep+": {}\n")
	const rounds = 7
	unread := 0
	plan := func(dir string, want int) time.Duration {
		start := time.Now()
		code, out := cli(dir, "plan", "--detailed-exitcode")
		took := time.Since(start)
		if code != want {
			b.Fatalf("plan exited %d, want %d:\n%s", code, want, out)
		}
		if strings.Contains(out, "size not read") {
			unread++
		}
		return took
	}
	// Warm up both paths once (first connection, first exec).
	plan(dirB, 0)
	plan(dirA, 2)
	unread = 0
	var without, with []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N*rounds; i++ {
		without = append(without, plan(dirB, 0))
		with = append(with, plan(dirA, 2))
	}
	b.StopTimer()
	w, d := median(without), median(with)
	b.Logf("plan without a delete: %v; with one: %v (medians of %d); sizes not read in %d of them", w, d, len(with), unread)
	benchtable.Report(b, benchtable.Row{Figure: "plan with a delete", Value: d.Seconds(), Unit: "s", Baseline: "plan without", Base: w.Seconds()})
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
