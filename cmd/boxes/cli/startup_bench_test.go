package cli

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-box/boxes/internal/benchtable"
)

// startupRuns is how many times each program is run, for each figure:
// the totals of fewer runs move by milliseconds on a busy machine.
const startupRuns = 51

// BenchmarkStartup measures what boxes costs before it does anything:
// boxes version against its floor, internal/initfloor, a program linking
// exactly the packages of other modules boxes links and doing nothing
// else. For each, the time its packages take to initialise (the clock
// times GODEBUG=inittrace=1 reports, added up) and the whole run, from
// starting the process to its end; medians of startupRuns runs, the two
// programs run in turn so that a load that comes and goes weighs on both.
// On a busy machine the totals move by a millisecond or two from run to
// run; the packages the floor lacks are also added up alone.
// The 8 packages whose initialisation costs most are logged (go test
// keeps 10 lines of a benchmark's log).
func BenchmarkStartup(b *testing.B) {
	if testing.Short() {
		b.Skip("builds two binaries")
	}
	floor := floorBinary(b)
	bin := benchBinary(b)
	var (
		boxesInit, floorInit, boxesRun, floorRun, floorQuietRun []time.Duration
		byPackage                                               = map[string][]time.Duration{}
		inFloor                                                 = map[string]bool{}
	)
	for range startupRuns {
		total, pkgs := initTrace(b, bin, "version")
		boxesInit = append(boxesInit, total)
		for p, d := range pkgs {
			byPackage[p] = append(byPackage[p], d)
		}
		total, pkgs = initTrace(b, floor)
		floorInit = append(floorInit, total)
		for p := range pkgs {
			inFloor[p] = true
		}
		boxesRun = append(boxesRun, timedRun(b, bin, "version"))
		floorRun = append(floorRun, timedRun(b, floor))
		floorQuietRun = append(floorQuietRun, timedRunEnv(b, quietCollector, floor))
	}
	b.Logf("the packages whose initialisation costs most in boxes version (median of %d):\n%s", startupRuns, topPackages(byPackage, 8))
	benchtable.Report(b, benchtable.Row{Figure: fmt.Sprintf("boxes version: package initialisation (inittrace, median of %d)", startupRuns),
		Value: ms(median(boxesInit)), Unit: "ms",
		Baseline: "the floor: the same packages of other modules, and nothing else", Base: ms(median(floorInit))})
	// What boxes adds to the floor, steadier than the difference of the
	// totals: each package's median, of the packages the floor lacks.
	var only time.Duration
	for p, ds := range byPackage {
		if !inFloor[p] {
			only += median(ds)
		}
	}
	benchtable.Report(b, benchtable.Row{Figure: "boxes version: initialisation of the packages the floor lacks (boxes' own, standard ones only boxes imports; each one's median, added up)",
		Value: ms(only), Unit: "ms"})
	benchtable.Report(b, benchtable.Row{Figure: fmt.Sprintf("boxes version, the whole run (median of %d)", startupRuns),
		Value: ms(median(boxesRun)), Unit: "ms",
		Baseline: "the floor's whole run", Base: ms(median(floorRun))})
	benchtable.Report(b, benchtable.Row{Figure: fmt.Sprintf("boxes version, the whole run (median of %d)", startupRuns),
		Value: ms(median(boxesRun)), Unit: "ms",
		Baseline: "the floor's whole run with the collector off as boxes starts (GOGC=off GOMEMLIMIT=256MiB)", Base: ms(median(floorQuietRun))})
}

// quietCollector is the environment that starts a Go program with its
// garbage collector as boxes starts with it (internal/gcstart): off, under
// a memory limit of 256 MiB. The floors run with it too, so that boxes'
// figures stand beside a floor that has the same start.
var quietCollector = []string{"GOGC=off", "GOMEMLIMIT=256MiB"}

// floorBinary builds internal/initfloor, boxes' start-up floor; a
// benchmark that needs it is skipped where it links other packages than
// boxes (it imports those boxes links on Linux).
func floorBinary(b *testing.B) string {
	b.Helper()
	if runtime.GOOS != "linux" {
		b.Skip("the start-up floor imports the packages boxes links on Linux")
	}
	floor := filepath.Join(b.TempDir(), "initfloor")
	if out, err := exec.Command("go", "build", "-o", floor, "github.com/hermes-box/boxes/internal/initfloor").CombinedOutput(); err != nil {
		b.Fatalf("go build initfloor: %v\n%s", err, out)
	}
	return floor
}

// initLine is a line of GODEBUG=inittrace=1: a package and the clock
// time its initialisation took.
var initLine = regexp.MustCompile(`^init (\S+) @\S+ ms, ([0-9.]+) ms clock`)

// initTrace runs bin with args under GODEBUG=inittrace=1, and returns the
// clock time of every package's initialisation added up, and each
// package's.
func initTrace(b *testing.B, bin string, args ...string) (total time.Duration, pkgs map[string]time.Duration) {
	b.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s %v: %v\n%s", bin, args, err, stderr.String())
	}
	pkgs = map[string]time.Duration{}
	for _, line := range strings.Split(stderr.String(), "\n") {
		m := initLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			b.Fatalf("inittrace line %q: %v", line, err)
		}
		d := time.Duration(v * float64(time.Millisecond))
		pkgs[m[1]] += d
		total += d
	}
	if len(pkgs) == 0 {
		b.Fatalf("%s %v printed no inittrace lines:\n%s", bin, args, stderr.String())
	}
	return total, pkgs
}

// timedRun is how long bin with args takes, from starting the process to
// its end.
func timedRun(b *testing.B, bin string, args ...string) time.Duration {
	b.Helper()
	return timedRunEnv(b, nil, bin, args...)
}

// timedRunEnv is timedRun with env added to the environment.
func timedRunEnv(b *testing.B, env []string, bin string, args ...string) time.Duration {
	b.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s %v: %v\n%s", bin, args, err, out)
	}
	return time.Since(start)
}

// topPackages are the n packages of the highest median, one a line.
func topPackages(byPackage map[string][]time.Duration, n int) string {
	type cost struct {
		pkg string
		d   time.Duration
	}
	var cs []cost
	for p, ds := range byPackage {
		cs = append(cs, cost{p, median(ds)})
	}
	slices.SortFunc(cs, func(a, b cost) int {
		return cmp.Or(cmp.Compare(b.d, a.d), strings.Compare(a.pkg, b.pkg))
	})
	var sb strings.Builder
	for _, c := range cs[:min(n, len(cs))] {
		fmt.Fprintf(&sb, "%8.3f ms  %s\n", ms(c.d), c.pkg)
	}
	return sb.String()
}
