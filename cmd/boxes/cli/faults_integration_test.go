package cli

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// killTrials is how many random kills TestIntegrationRandomKills makes:
// BOXES_KILL_TRIALS, 5 when unset (make test); make test-long asks for 50.
func killTrials(t *testing.T) int { return trialsFrom(t, "BOXES_KILL_TRIALS", 5) }

// trialsFrom is the number in environment variable name, def when unset.
func trialsFrom(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// killSeed is the seed of a test's random kill times: BOXES_KILL_SEED
// replays a run, else the clock's.
func killSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("BOXES_KILL_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("BOXES_KILL_SEED=%d", seed)
	return seed
}

// faultScenario sets the engine and boxes.yaml up for one kind of apply and
// names what the apply must end with.
type faultScenario struct {
	name string
	// setup brings the boxes to the state before the apply and writes the
	// boxes.yaml and lock the apply will converge to.
	setup func(t *testing.T, dir string)
	// declared are the boxes the apply ends with; each keeps its marker if
	// setup wrote one. deleted are the boxes it removes.
	declared, deleted []string
	// marked are the declared boxes that hold a marker before the apply.
	marked []string
}

// killBoxes are TestIntegrationRandomKills' boxes, its own so that it runs
// beside the tests of the shared itBoxes.
var killBoxes = []string{"it-k-alpha", "it-k-beta", "it-k-gamma"}

// TestIntegrationRandomKills SIGKILLs apply at a random moment of creates,
// recreates, deletes and mixed plans, then checks that the next plan shows
// what is left, the next apply converges, the plan after it is empty, the
// data in /data is intact, and nothing of a deleted box or a duplicate
// container remains. Real engine: the kills fall anywhere in compose's
// creates, recreates and removals, where half-made containers and
// duplicate networks come from.
func TestIntegrationRandomKills(t *testing.T) {
	image, image2 := startIntegration(t)
	removeBoxes(killBoxes...)
	t.Cleanup(func() { removeBoxes(killBoxes...) })
	trials := killTrials(t)
	began := time.Now()
	bin := buildBoxes(t)
	seed := killSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed))

	yaml := func(names ...string) string {
		s := "version: 1\nboxes:\n"
		for _, n := range names {
			s += "  " + n + ": {}\n"
		}
		return s
	}
	lock := func(t *testing.T, dir, img string) {
		if r := boxes(t, dir, "lock", "image", img); r.code != 0 {
			t.Fatalf("lock image: %+v", r)
		}
	}
	// up makes boxes with image img and a marker in each one's /data.
	up := func(t *testing.T, dir, img string, names ...string) {
		writeFile(t, filepath.Join(dir, "boxes.yaml"), yaml(names...))
		lock(t, dir, img)
		if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
			t.Fatalf("setup apply: %+v", r)
		}
		for _, n := range names {
			dockerOut(t, "exec", "hbl-"+n+"-agent-1", "sh", "-c", "echo kept-"+n+" > /data/marker")
		}
	}
	scenarios := []faultScenario{
		{
			name: "create",
			setup: func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, "boxes.yaml"), yaml("it-k-alpha", "it-k-beta", "it-k-gamma"))
				lock(t, dir, image)
			},
			declared: []string{"it-k-alpha", "it-k-beta", "it-k-gamma"},
		},
		{
			name: "recreate",
			setup: func(t *testing.T, dir string) {
				up(t, dir, image, "it-k-alpha", "it-k-beta")
				lock(t, dir, image2)
			},
			declared: []string{"it-k-alpha", "it-k-beta"},
			marked:   []string{"it-k-alpha", "it-k-beta"},
		},
		{
			name: "delete",
			setup: func(t *testing.T, dir string) {
				up(t, dir, image, "it-k-alpha", "it-k-beta", "it-k-gamma")
				writeFile(t, filepath.Join(dir, "boxes.yaml"), yaml("it-k-alpha"))
			},
			declared: []string{"it-k-alpha"},
			marked:   []string{"it-k-alpha"},
			deleted:  []string{"it-k-beta", "it-k-gamma"},
		},
		{
			name: "mixed",
			setup: func(t *testing.T, dir string) {
				up(t, dir, image, "it-k-alpha", "it-k-beta")
				writeFile(t, filepath.Join(dir, "boxes.yaml"), yaml("it-k-alpha", "it-k-gamma"))
				lock(t, dir, image2)
			},
			declared: []string{"it-k-alpha", "it-k-gamma"},
			marked:   []string{"it-k-alpha"},
			deleted:  []string{"it-k-beta"},
		},
	}

	apply := func(dir string, sc faultScenario) *exec.Cmd {
		args := []string{"-f", filepath.Join(dir, "boxes.yaml"), "apply", "--auto-approve"}
		for _, d := range sc.deleted {
			args = append(args, "--confirm-delete", d)
		}
		return exec.Command(bin, args...)
	}
	// A first apply of each scenario, not killed, measures how long it
	// takes: the kill time is drawn over all of it.
	took := map[string]time.Duration{}
	var converged, lost, orphans int
	for i := 0; i < trials; i++ {
		sc := scenarios[i%len(scenarios)]
		t.Run(fmt.Sprintf("%02d-%s", i, sc.name), func(t *testing.T) {
			removeBoxes(killBoxes...)
			dir := t.TempDir()
			if _, ok := took[sc.name]; !ok {
				sc.setup(t, dir)
				start := time.Now()
				if out, err := apply(dir, sc).CombinedOutput(); err != nil {
					t.Fatalf("uninterrupted apply: %v\n%s", err, out)
				}
				took[sc.name] = time.Since(start)
				t.Logf("%s apply takes %s", sc.name, took[sc.name].Round(time.Millisecond))
				removeBoxes(killBoxes...)
				dir = t.TempDir()
			}
			sc.setup(t, dir)
			delay := time.Duration(rng.Int64N(int64(took[sc.name]) * 11 / 10))
			cmd := apply(dir, sc)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			timer := time.AfterFunc(delay, func() { _ = cmd.Process.Kill() })
			err := cmd.Wait()
			timer.Stop()
			t.Logf("killed after %s (%v)", delay.Round(time.Millisecond), err)

			r := boxes(t, dir, "plan", "--detailed-exitcode")
			if r.code != 0 && r.code != 2 {
				t.Fatalf("plan after the kill: %+v", r)
			}
			if i := strings.LastIndex(r.stdout, "Plan:"); i >= 0 {
				t.Logf("left: %s", strings.TrimSpace(r.stdout[i:]))
			}
			again := append([]string{"apply", "--auto-approve"}, confirmArgs(sc.deleted)...)
			if r := boxes(t, dir, again...); r.code != 0 {
				t.Fatalf("apply after the kill: %+v", r)
			}
			if r := boxes(t, dir, "plan", "--detailed-exitcode"); r.code != 0 || !strings.Contains(r.stdout, "No changes.") {
				t.Fatalf("plan after converging: %+v", r)
			}
			converged++
			for _, b := range sc.marked {
				if got := dockerOut(t, "exec", "hbl-"+b+"-agent-1", "cat", "/data/marker"); got != "kept-"+b {
					lost++
					t.Errorf("%s lost its data: %q", b, got)
				}
			}
			for _, b := range sc.declared {
				if n := len(strings.Fields(dockerOut(t, "ps", "-aq", "--filter", "label=boxes.box="+b))); n != 3 {
					orphans++
					t.Errorf("%s has %d containers, want 3 (agent, executor, gate)", b, n)
				}
				if n := len(strings.Fields(dockerOut(t, "network", "ls", "-q", "--filter", "label=boxes.box="+b))); n != 2 {
					orphans++
					t.Errorf("%s has %d networks, want 2 (its own and the inside one)", b, n)
				}
			}
			for _, b := range sc.deleted {
				for _, kind := range []string{"container", "volume", "network"} {
					ls := []string{kind, "ls", "-q", "--filter", "label=boxes.box=" + b}
					if kind == "container" {
						ls = []string{"ps", "-aq", "--filter", "label=boxes.box=" + b}
					}
					if left := dockerOut(t, ls...); left != "" {
						orphans++
						t.Errorf("deleted box %s still has a %s: %s", b, kind, left)
					}
				}
			}
		})
	}
	t.Logf("random kills: %d trials, %d converged, %d markers lost, %d orphans (BOXES_KILL_SEED=%d, %s)",
		trials, converged, lost, orphans, seed, time.Since(began).Round(time.Second))
}

func confirmArgs(names []string) []string {
	var args []string
	for _, n := range names {
		args = append(args, "--confirm-delete", n)
	}
	return args
}
