package cli

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hermes-box/boxes/compose"
)

// TestIntegrationKubeApplyKilled: boxes apply SIGKILLed at a random moment
// while it makes boxes on the cluster, replaces their gates (an egress
// change) and deletes one; each time the plan after the kill still has
// work, the next apply converges and the plan after it is empty, /data of
// every box kept is what was written, and every box has exactly the
// objects an uninterrupted apply makes (a deleted one none): nothing lost,
// nothing left. BOXES_KUBE_KILL_TRIALS sets the number of kills (3, one
// per change, by default; make test-long runs more), BOXES_KILL_SEED the
// moments. Real cluster: the kills land between the API server's writes
// and while the controllers and the kubelet act on them.
func TestIntegrationKubeApplyKilled(t *testing.T) {
	image, _ := startIntegration(t)
	k := startKubeRegistry(t, image, "it-kube-kill")
	bin := buildBoxes(t)
	trials := trialsFrom(t, "BOXES_KUBE_KILL_TRIALS", 3)
	seed := killSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed))
	const a, b = "it-kk-a", "it-kk-b"
	began := time.Now()

	// objects are box's objects in the namespace, its name made BOX.
	objects := func(box string) []string {
		out := k.kubectl("-n", k.ns, "get", "sandboxes.agents.x-k8s.io,pods,persistentvolumeclaims,secrets,services,networkpolicies,configmaps",
			"-l", compose.BoxLabel+"="+box, "-o", "name")
		names := strings.Fields(strings.ReplaceAll(out, box, "BOX"))
		slices.Sort(names)
		return names
	}
	apply := func(dir string, deleted []string) *exec.Cmd {
		return exec.Command(bin, append([]string{"-f", filepath.Join(dir, "boxes.yaml"), "apply", "--auto-approve"}, confirmArgs(deleted)...)...)
	}
	converge := func(t *testing.T, dir string, deleted []string) {
		t.Helper()
		r := boxes(t, dir, append([]string{"apply", "--auto-approve"}, confirmArgs(deleted)...)...)
		if r.code != 0 {
			t.Fatalf("apply: %+v", r)
		}
		if p := boxes(t, dir, "plan", "--detailed-exitcode"); p.code != 0 {
			t.Fatalf("plan after converging: %+v", p)
		}
	}
	mark := func(t *testing.T, dir string, names ...string) {
		t.Helper()
		for _, n := range names {
			if r := boxes(t, dir, "exec", "-u", "root", n, "--", "sh", "-c", "echo kept-"+n+" > /data/marker"); r.code != 0 {
				t.Fatalf("marking %s: %+v", n, r)
			}
		}
	}
	// clean removes both boxes (data and all) through boxes itself, and
	// checks the namespace holds nothing of theirs after.
	clean := func(t *testing.T) {
		t.Helper()
		dir := t.TempDir()
		k.write(t, dir)
		converge(t, dir, []string{a, b})
		for _, n := range []string{a, b} {
			if left := objects(n); len(left) != 0 {
				t.Fatalf("%s left after its delete: %v", n, left)
			}
		}
	}
	type scenario struct {
		name              string
		setup             func(t *testing.T, dir string)
		declared, deleted []string
		marked            []string
	}
	scenarios := []scenario{
		{name: "create", setup: func(t *testing.T, dir string) { k.write(t, dir, a, b) }, declared: []string{a, b}},
		{name: "replace the gates", setup: func(t *testing.T, dir string) {
			k.write(t, dir, a, b)
			converge(t, dir, nil)
			mark(t, dir, a, b)
			k.writeWith(t, dir, "defaults:\n  egress: [registry.npmjs.org]\n", a, b)
		}, declared: []string{a, b}, marked: []string{a, b}},
		{name: "delete", setup: func(t *testing.T, dir string) {
			k.write(t, dir, a, b)
			converge(t, dir, nil)
			mark(t, dir, a)
			k.write(t, dir, a)
		}, declared: []string{a}, marked: []string{a}, deleted: []string{b}},
	}

	took := map[string]time.Duration{}
	var want []string // a box's objects, as an uninterrupted apply makes them
	var killed, finished int
	for i := range trials {
		sc := scenarios[i%len(scenarios)]
		t.Run(fmt.Sprintf("%02d-%s", i, sc.name), func(t *testing.T) {
			if _, ok := took[sc.name]; !ok {
				// Uninterrupted first: how long it takes, and what it makes.
				dir := t.TempDir()
				sc.setup(t, dir)
				start := time.Now()
				if out, err := apply(dir, sc.deleted).CombinedOutput(); err != nil {
					t.Fatalf("uninterrupted apply: %v\n%s", err, out)
				}
				took[sc.name] = time.Since(start)
				if want == nil {
					want = objects(sc.declared[0])
				}
				t.Logf("%s: an uninterrupted apply takes %s", sc.name, took[sc.name].Round(time.Millisecond))
				clean(t)
			}
			dir := t.TempDir()
			sc.setup(t, dir)
			delay := time.Duration(rng.Int64N(int64(took[sc.name]) * 11 / 10))
			cmd := apply(dir, sc.deleted)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				finished++
				t.Logf("apply ended (%v) before the kill at %s", err, delay.Round(time.Millisecond))
			case <-time.After(delay):
				_ = cmd.Process.Kill()
				<-done
				killed++
				t.Logf("apply killed after %s", delay.Round(time.Millisecond))
				if p := boxes(t, dir, "plan", "--detailed-exitcode"); p.code != 2 && p.code != 0 {
					t.Errorf("plan after the kill: %+v", p)
				} else if p.code == 2 {
					t.Logf("plan after the kill: %s", p.stdout[strings.LastIndex(p.stdout, "Plan:"):])
				}
			}
			converge(t, dir, sc.deleted)
			for _, n := range sc.marked {
				if r := boxes(t, dir, "exec", "-u", "root", n, "--", "cat", "/data/marker"); strings.TrimSpace(r.stdout) != "kept-"+n {
					t.Errorf("%s's /data/marker after the kill: %+v", n, r)
				}
			}
			for _, n := range sc.declared {
				if got := objects(n); !slices.Equal(got, want) {
					t.Errorf("%s has objects %v, want %v as an uninterrupted apply makes", n, got, want)
				}
			}
			for _, n := range sc.deleted {
				if left := objects(n); len(left) != 0 {
					t.Errorf("deleted box %s left %v", n, left)
				}
			}
			clean(t)
		})
	}
	t.Logf("kills on the cluster: %d trials, %d killed, %d finished first (BOXES_KILL_SEED=%d, %s)", trials, killed, finished, seed, time.Since(began).Round(time.Second))
}
