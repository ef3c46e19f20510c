package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hermes-box/boxes/internal/benchtable"
)

// BenchmarkPlanWithDelete measures boxes plan, the command as a user runs
// it, on two running boxes: declared both (no changes), and with one no
// longer declared (a delete, whose volumes the plan sizes). Alternated, so
// both figures come from the same minutes of the same engine.
func BenchmarkPlanWithDelete(b *testing.B) {
	if testing.Short() {
		b.Skip("real Docker engine")
	}
	const keep, gone = "it-bench-keep", "it-bench-gone"
	removeBoxes(keep, gone)
	b.Cleanup(func() { removeBoxes(keep, gone) })
	dir := b.TempDir()
	both := "version: 1\nfleet: it\nboxes:\n  " + keep + ": {}\n  " + gone + ": {}\n"
	one := "version: 1\nfleet: it\nboxes:\n  " + keep + ": {}\n"
	image := os.Getenv("BOXES_TEST_IMAGE")
	if image == "" {
		image = "hermes-box-lite:test"
	}
	write := func(content string) {
		if err := os.WriteFile(filepath.Join(dir, "boxes.yaml"), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cli := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := Main(Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, append([]string{"-f", filepath.Join(dir, "boxes.yaml")}, args...))
		return code, out.String() + errb.String()
	}
	write(both)
	if code, out := cli("lock", "image", image); code != 0 {
		b.Fatal(out)
	}
	if code, out := cli("apply", "--auto-approve"); code != 0 {
		b.Fatal(out)
	}
	// hb's healthcheck reports the size of /data, where the plan reads it
	// without an exec; a box being deleted has usually run long enough.
	for deadline := time.Now().Add(40 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		out, _ := exec.Command("docker", "inspect", "-f", "{{json .State.Health}}", "hbl-"+gone+"-agent-1", "hbl-"+gone+"-executor-1").Output()
		if strings.Count(string(out), "hb-size: ") >= 2 {
			break
		}
	}
	const rounds = 7
	plan := func(content string, want int) time.Duration {
		write(content)
		start := time.Now()
		code, out := cli("plan", "--detailed-exitcode")
		took := time.Since(start)
		if code != want {
			b.Fatalf("plan exited %d, want %d:\n%s", code, want, out)
		}
		if want == 2 && !strings.Contains(out, "MiB") && !strings.Contains(out, "KiB") && !strings.Contains(out, " B") {
			b.Logf("the delete's sizes were not read:\n%s", out)
		}
		return took
	}
	// Warm up both paths once (first connection, first exec).
	plan(both, 0)
	plan(one, 2)
	var without, with []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N*rounds; i++ {
		without = append(without, plan(both, 0))
		with = append(with, plan(one, 2))
	}
	b.StopTimer()
	w, d := median(without), median(with)
	b.Logf("plan without a delete: %v; with one: %v (medians of %d)", w, d, len(with))
	benchtable.Report(b, benchtable.Row{Figure: "plan with a delete", Value: d.Seconds(), Unit: "s", Baseline: "plan without", Base: w.Seconds()})
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
