package cli_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-box/boxes/internal/benchtable"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/workspace"
)

// The simulated fleet's engines: every call to a host's engine takes
// simLatency, and simSlow on the slow hosts; the spare hosts are down
// while the changes are applied.
const (
	simHosts       = 100
	simLatency     = time.Millisecond
	simSlow        = 25 * time.Millisecond
	simParallelism = 8
)

var (
	simSlowHosts  = []string{"h90", "h91", "h92"}
	simSpareHosts = []string{"h98", "h99"}
)

func simLatencies() map[string]time.Duration {
	l := map[string]time.Duration{"": simLatency}
	for i := range simHosts {
		l[fmt.Sprintf("h%02d", i)] = simLatency
	}
	for _, h := range simSlowHosts {
		l[h] = simSlow
	}
	return l
}

// BenchmarkFleet: a fleet on 100 hosts simulated on fake engines (no
// Docker), grown to 1,000, 5,000 and 10,000 boxes: a tenth of them pool
// boxes, a quarter of those leased, and a tenth drifted (settings changed,
// stopped, crashed); every engine call takes 1 ms, 25 ms on 3 slow hosts.
// At each size, boxes plan's time and its processor time (medians of 3)
// against 5× and 10× those of 1,000 boxes, and at 10,000 against 1 s; the
// heap an open
// workspace keeps with its plan, by 1,000 boxes; the engine calls of a plan
// on its busiest host. Then, with 2 hosts down, boxes apply --target of the
// 1,000 changes against the floor: the plan of the same targets, then the
// fake's latency of the changes' engine calls over --parallelism.
func BenchmarkFleet(b *testing.B) {
	sizes := []int{1000, 5000, 10000}
	took, cpu := map[int]time.Duration{}, map[int]time.Duration{}
	heap := map[int]float64{}
	busiest := map[int]int64{}
	var apply, floor time.Duration
	var changes int
	var applyCalls int64
	for range b.N {
		// One fleet grown from size to size: what it has is made once.
		f := newSimFleet(b, simShape{Hosts: simHosts, Pools: 10, Spare: simSpareHosts}, simLatencies())
		for _, n := range sizes {
			f.grow(n)
			heap[n] += f.planHeap()
			times, cpus := make([]time.Duration, 3), make([]time.Duration, 3)
			for i := range times {
				f.conn.ResetCalls()
				before := cpuTime()
				times[i], _ = f.run("plan")
				cpus[i] = cpuTime() - before
			}
			took[n] += median(times)
			cpu[n] += median(cpus)
			var most int64
			for _, byCall := range f.conn.Calls() {
				most = max(most, totalCalls(byCall))
			}
			busiest[n] += most
		}

		// The changes, with the spare hosts down: a plan of the same
		// targets first, whose calls the apply makes too, then the apply.
		f.conn.Down = map[string]bool{}
		for _, h := range simSpareHosts {
			f.conn.Down[h] = true
		}
		target := strings.Join(f.drifted, ",")
		f.conn.ResetCalls()
		planned, _ := f.run("plan", "--target", target)
		planWaited := f.conn.Waited()
		f.conn.ResetCalls()
		t, out := f.run("apply", "--auto-approve", "--parallelism", fmt.Sprint(simParallelism), "--target", target)
		if !strings.Contains(out, "Apply complete") {
			b.Fatalf("apply did not complete:\n%s", tail(out))
		}
		apply += t
		floor += planned + (f.conn.Waited()-planWaited)/simParallelism
		changes = len(f.drifted)
		for _, byCall := range f.conn.Calls() {
			applyCalls += totalCalls(byCall)
		}
		if _, out := f.run("plan", "--target", target); !strings.Contains(out, "No changes.") {
			b.Fatalf("plan after apply is not empty:\n%s", tail(out))
		}
	}
	N := float64(b.N)
	first, last := sizes[0], sizes[len(sizes)-1]
	var rows []benchtable.Row
	for _, n := range sizes {
		r := benchtable.Row{Figure: fmt.Sprintf("plan, %s boxes on %d hosts (fake engines)", thousands(n), simHosts), Value: seconds(took[n]) / N, Unit: "s"}
		if n != first {
			k := n / first
			r.Baseline, r.Base = fmt.Sprintf("%d× the plan of %s boxes (linear)", k, thousands(first)), float64(k)*seconds(took[first])/N
		}
		rows = append(rows, r)
	}
	rows = append(rows, benchtable.Row{Figure: fmt.Sprintf("plan, %s boxes on %d hosts", thousands(last), simHosts), Value: seconds(took[last]) / N, Unit: "s",
		Baseline: "the goal", Base: 1})
	// The processor time, which other work on the machine does not
	// lengthen as it does the time taken.
	for _, n := range sizes {
		r := benchtable.Row{Figure: fmt.Sprintf("plan, %s boxes: processor time (user and system)", thousands(n)), Value: seconds(cpu[n]) / N, Unit: "s"}
		if n != first {
			k := n / first
			r.Baseline, r.Base = fmt.Sprintf("%d× the same at %s boxes", k, thousands(first)), float64(k)*seconds(cpu[first])/N
		}
		rows = append(rows, r)
	}
	for _, n := range sizes {
		r := benchtable.Row{Figure: fmt.Sprintf("heap of a workspace and its plan, %s boxes, by 1,000 boxes", thousands(n)), Value: heap[n] / N / (float64(n) / 1000), Unit: "MiB"}
		if n != first {
			r.Baseline, r.Base = fmt.Sprintf("the same at %s boxes", thousands(first)), heap[first]/N/(float64(first)/1000)
		}
		rows = append(rows, r)
	}
	for _, n := range sizes {
		r := benchtable.Row{Figure: fmt.Sprintf("plan, %s boxes: engine calls to the busiest host", thousands(n)), Value: float64(busiest[n]) / N, Unit: "calls"}
		if n != first {
			r.Baseline, r.Base = fmt.Sprintf("the same at %s boxes", thousands(first)), float64(busiest[first])/N
		}
		rows = append(rows, r)
	}
	rows = append(rows, benchtable.Row{
		Figure:   fmt.Sprintf("apply of %s changes to %s boxes (--parallelism %d, 2 hosts down; %s engine calls)", thousands(changes), thousands(last), simParallelism, thousands(int(applyCalls/int64(b.N)))),
		Value:    seconds(apply) / N,
		Unit:     "s",
		Baseline: fmt.Sprintf("the plan of its targets, then the fake's latency of the changes' calls / %d", simParallelism),
		Base:     seconds(floor) / N,
	})
	for _, r := range rows {
		benchtable.Report(b, r)
	}
}

// thousands is n with a comma between thousands: 10,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// planHeap is the heap, in MiB, that an open workspace keeps with its
// plan: what a plan of the fleet holds at its end.
func (f *simFleet) planHeap() float64 {
	f.tb.Helper()
	before := liveHeap()
	ws, err := workspace.Open(f.file(), workspace.Options{Connect: f.kinds()})
	if err != nil {
		f.tb.Fatal(err)
	}
	defer ws.Close()
	p, err := ws.Plan(context.Background(), reconcile.PlanOptions{})
	if err != nil {
		f.tb.Fatal(err)
	}
	after := liveHeap()
	runtime.KeepAlive(ws)
	runtime.KeepAlive(p)
	return float64(after-before) / (1 << 20)
}

// cpuTime is the processor time the process has had, user and system.
func cpuTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// liveHeap is the heap in use once the garbage is collected.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
