package cli

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"

	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/internal/testhost"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/statedir"
)

// restoreKillTrials is how many random kills the load, seeding and move
// trials make of each kind: BOXES_RESTORE_KILL_TRIALS, 2 when unset (make
// test); make test-long asks for 15.
func restoreKillTrials(t *testing.T) int { return trialsFrom(t, "BOXES_RESTORE_KILL_TRIALS", 2) }

// killKind is one kind of command the trials SIGKILL at a random moment.
type killKind struct {
	name string
	// setup brings the engines and dir to the state before the command.
	setup func(t *testing.T, dir string)
	// args are the command's arguments after -f boxes.yaml.
	args func() []string
	// left checks the plan made right after the kill.
	left func(t *testing.T, dir string, plan run)
	// finish runs the command that must converge after the kill.
	finish func(t *testing.T, dir string, plan run)
	// check counts, once converged, the markers lost and what is left over.
	check func(t *testing.T, dir string) (lost, orphans int)
}

// killTally adds up a test's trials.
type killTally struct {
	trials, midway, converged, lost, orphans int
}

func (k killTally) String() string {
	return fmt.Sprintf("%d trials (%d killed mid-way, %d after the command ended), %d converged, %d markers lost, %d orphans",
		k.trials, k.midway, k.trials-k.midway, k.converged, k.lost, k.orphans)
}

// timeKind sets k up and runs its command once without a kill, returning
// how long it took: the kill times of k's trials are drawn over all of it.
func timeKind(t *testing.T, bin, dir string, k killKind) time.Duration {
	t.Helper()
	k.setup(t, dir)
	start := time.Now()
	cmd := exec.Command(bin, append([]string{"-f", filepath.Join(dir, "boxes.yaml")}, k.args()...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted %s: %v\n%s", k.name, err, out)
	}
	took := time.Since(start)
	t.Logf("%s takes %s", k.name, took.Round(time.Millisecond))
	return took
}

// killTrial sets k up, runs its command, SIGKILLs it after a delay drawn
// over 1.1 times took, and checks that the next plan shows what is left, the
// next command converges, the plan after it is empty, and nothing is lost
// or left over.
func killTrial(t *testing.T, bin, dir string, k killKind, took time.Duration, rng *rand.Rand, tally *killTally) {
	t.Helper()
	tally.trials++
	k.setup(t, dir)
	delay := time.Duration(rng.Int64N(int64(took) * 11 / 10))
	// Output to a file: Wait need not wait for pipes a killed command's
	// children (ssh) still hold.
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command(bin, append([]string{"-f", filepath.Join(dir, "boxes.yaml")}, k.args()...)...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(delay, func() { _ = cmd.Process.Kill() })
	err = cmd.Wait()
	timer.Stop()
	switch {
	case !cmd.ProcessState.Exited():
		tally.midway++
		t.Logf("killed after %s", delay.Round(time.Millisecond))
	case err != nil:
		text, _ := os.ReadFile(out.Name())
		t.Fatalf("%s failed before the kill at %s: %v\n%s", k.name, delay.Round(time.Millisecond), err, text)
	default:
		t.Logf("ended before the kill at %s", delay.Round(time.Millisecond))
	}

	plan := boxes(t, dir, "plan", "--detailed-exitcode")
	if plan.code != 0 && plan.code != 2 {
		t.Fatalf("plan after the kill: %+v", plan)
	}
	if i := strings.LastIndex(plan.stdout, "Plan:"); i >= 0 {
		t.Logf("left: %s", strings.TrimSpace(plan.stdout[i:]))
	}
	k.left(t, dir, plan)
	k.finish(t, dir, plan)
	if r := boxes(t, dir, "plan", "--detailed-exitcode"); r.code != 0 || !strings.Contains(r.stdout, "No changes.") {
		t.Fatalf("plan after converging: %+v", r)
	}
	tally.converged++
	lost, orphans := k.check(t, dir)
	tally.lost += lost
	tally.orphans += orphans
}

// labelled counts the containers, volumes and networks labelled as box's on
// the local engine.
func labelled(t *testing.T, box string) (containers, volumes, networks int) {
	t.Helper()
	f := "label=" + compose.BoxLabel + "=" + box
	return len(strings.Fields(dockerOut(t, "ps", "-aq", "--filter", f))),
		len(strings.Fields(dockerOut(t, "volume", "ls", "-q", "--filter", f))),
		len(strings.Fields(dockerOut(t, "network", "ls", "-q", "--filter", f)))
}

// oneOffs lists the throwaway containers (boxes.oneoff) of box on the local
// engine: those that mount a volume of it, and those that measure the room
// for its restore.
func oneOffs(t *testing.T, box string) []string {
	t.Helper()
	ids := strings.Fields(dockerOut(t, "ps", "-aq", "--filter", "label="+compose.OneOffLabel, "--filter", "label="+compose.RoomLabel+"="+box))
	for _, v := range []string{compose.AgentVolume, compose.ExecutorVolume} {
		ids = append(ids, strings.Fields(dockerOut(t, "ps", "-aq", "--filter", "label="+compose.OneOffLabel, "--filter", "volume="+compose.VolumeName(box, v)))...)
	}
	return ids
}

// removeWithOneOffs removes boxes, any throwaway container holding their
// volumes, and any measuring the room for their restores, with its volume.
func removeWithOneOffs(names ...string) {
	for _, b := range names {
		ids, _ := exec.Command("docker", "ps", "-aq", "--filter", "label="+compose.RoomLabel+"="+b).Output()
		for _, id := range strings.Fields(string(ids)) {
			_ = exec.Command("docker", "rm", "-f", "-v", id).Run()
		}
		for _, v := range []string{compose.AgentVolume, compose.ExecutorVolume} {
			ids, _ := exec.Command("docker", "ps", "-aq", "--filter", "volume="+compose.VolumeName(b, v)).Output()
			for _, id := range strings.Fields(string(ids)) {
				_ = exec.Command("docker", "rm", "-f", id).Run()
			}
		}
	}
	removeBoxes(names...)
}

// TestIntegrationRandomKillsRestore SIGKILLs load (of an archive made once
// here) and a seeding apply (a box with restore:) at random moments, drawn
// over the whole of an uninterrupted run of each. After each kill the next
// plan shows the restore incomplete or the box still to create, the next
// load or apply converges, the plan after it is empty, the restored data is
// the archive's, and the box has its containers, volumes and network once,
// with no restore record left. Real engine: the kills fall in real restores
// into volumes, the measures of the room for them and their throwaway
// containers included.
func TestIntegrationRandomKillsRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image := testImage(t, "BOXES_TEST_IMAGE", "hermes-box-lite:test")
	const src, loaded, seeded = "it-h11c-src", "it-h11c-load", "it-h11c-seed"
	removeWithOneOffs(src, loaded, seeded)
	t.Cleanup(func() { removeWithOneOffs(src, loaded, seeded) })
	trials := restoreKillTrials(t)
	began := time.Now()
	bin := buildBoxes(t)
	seed := killSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed))

	key, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "key.txt")
	writeFile(t, keyFile, key.String()+"\n")
	t.Setenv(backup.EnvIdentity, keyFile)
	config := func(dir, boxes string) {
		writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nfleet: it-h11c\narchive:\n  recipients: ["+key.Recipient().String()+"]\nboxes:\n"+boxes)
	}

	// The archive: a box with a marker and 8 MiB of random data in /data
	// (so that the restore is a good part of the command), saved once.
	work := t.TempDir()
	config(work, "  "+src+": {}\n")
	if r := boxes(t, work, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	lock, err := os.ReadFile(filepath.Join(work, "boxes.lock"))
	if err != nil {
		t.Fatal(err)
	}
	if r := boxes(t, work, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	if r := boxes(t, work, "exec", src, "--", "sh", "-c", "echo kept-in-the-archive > /data/home/agent/marker && head -c 8M /dev/urandom > /data/home/agent/big"); r.code != 0 {
		t.Fatalf("writing the marker: %+v", r)
	}
	bigSum := sha256In(t, src, "/data/home/agent/big")
	if r := boxes(t, work, "save", src); r.code != 0 {
		t.Fatalf("save: %+v", r)
	}
	saved, _ := filepath.Glob(filepath.Join(work, "backups", src+"-*"))
	if len(saved) != 1 {
		t.Fatalf("backups: %v", saved)
	}
	archive := saved[0]
	removeBoxes(src)

	declare := func(t *testing.T, dir, boxes string) {
		config(dir, boxes)
		if err := os.WriteFile(filepath.Join(dir, "boxes.lock"), lock, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// left: a restore recorded as begun is in the plan as incomplete, and a
	// box with no container yet is one to create.
	left := func(box string) func(t *testing.T, dir string, plan run) {
		return func(t *testing.T, dir string, plan run) {
			_, recorded, err := statedir.Beside(filepath.Join(dir, "boxes.yaml")).Restores().Get(box)
			if err != nil {
				t.Error(err)
			}
			if recorded && (plan.code != 2 || !strings.Contains(plan.stdout, "restore incomplete")) {
				t.Errorf("a restore cut short is not in the plan: %+v", plan)
			}
			if c, _, _ := labelled(t, box); c == 0 && (plan.code != 2 || !strings.Contains(plan.stdout, "1 to create")) {
				t.Errorf("%s has no container and the plan does not create it: %+v", box, plan)
			}
		}
	}
	check := func(box string) func(t *testing.T, dir string) (lost, orphans int) {
		return func(t *testing.T, dir string) (lost, orphans int) {
			if got := marker(t, dir, box); got != "kept-in-the-archive" {
				lost++
				t.Errorf("%s's marker: %q", box, got)
			}
			if got := sha256In(t, box, "/data/home/agent/big"); got != bigSum {
				lost++
				t.Errorf("%s's big file: %s, want %s", box, got, bigSum)
			}
			if c, v, n := labelled(t, box); c != 3 || v != 2 || n != 2 {
				orphans++
				t.Errorf("%s has %d containers, %d volumes, %d networks; want 3, 2, 2", box, c, v, n)
			}
			if ids := oneOffs(t, box); len(ids) > 0 {
				orphans++
				t.Errorf("throwaway containers of %s are left: %v", box, ids)
			}
			if _, ok, err := statedir.Beside(filepath.Join(dir, "boxes.yaml")).Restores().Get(box); ok || err != nil {
				orphans++
				t.Errorf("%s's restore record is left (%v)", box, err)
			}
			return lost, orphans
		}
	}
	kinds := []killKind{
		{
			name: "load",
			setup: func(t *testing.T, dir string) {
				removeWithOneOffs(loaded, seeded)
				declare(t, dir, "  "+loaded+": {}\n")
			},
			args: func() []string { return []string{"load", archive, loaded} },
			left: left(loaded),
			finish: func(t *testing.T, dir string, plan run) {
				r := boxes(t, dir, "load", archive, loaded)
				if plan.code == 0 {
					// The load had finished: loading again refuses to overwrite the box.
					if r.code == 0 || !strings.Contains(r.stderr, "already exists") {
						t.Errorf("load over the loaded box: %+v", r)
					}
				} else if r.code != 0 {
					t.Fatalf("load again: %+v", r)
				}
			},
			check: check(loaded),
		},
		{
			name: "seeding apply",
			setup: func(t *testing.T, dir string) {
				removeWithOneOffs(loaded, seeded)
				declare(t, dir, "  "+seeded+": {restore: backups/"+filepath.Base(archive)+"}\n")
				if err := os.MkdirAll(filepath.Join(dir, "backups"), 0o700); err != nil {
					t.Fatal(err)
				}
				_ = os.Remove(filepath.Join(dir, "backups", filepath.Base(archive)))
				if err := os.Link(archive, filepath.Join(dir, "backups", filepath.Base(archive))); err != nil {
					t.Fatal(err)
				}
			},
			args: func() []string { return []string{"apply", "--auto-approve"} },
			left: left(seeded),
			finish: func(t *testing.T, dir string, _ run) {
				if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
					t.Fatalf("apply after the kill: %+v", r)
				}
			},
			check: check(seeded),
		},
	}

	took := map[string]time.Duration{}
	var tally killTally
	for i := 0; i < trials*len(kinds); i++ {
		k := kinds[i%len(kinds)]
		t.Run(fmt.Sprintf("%02d-%s", i, strings.ReplaceAll(k.name, " ", "-")), func(t *testing.T) {
			if _, ok := took[k.name]; !ok {
				took[k.name] = timeKind(t, bin, t.TempDir(), k)
			}
			killTrial(t, bin, t.TempDir(), k, took[k.name], rng, &tally)
		})
	}
	t.Logf("random kills of load and seeding apply: %s (BOXES_KILL_SEED=%d, %s)", tally, seed, time.Since(began).Round(time.Second))
}

// TestIntegrationRandomKillsMove SIGKILLs apply at random moments of a move
// between the local engine and a second engine reached over ssh, to and
// fro, drawn over the whole of an uninterrupted move. After each
// kill the next plan shows the move while the old copy exists, the next
// apply finishes it, the plan after it is empty, the marker in /data has
// come along, and exactly one copy of the box is left, on the declared
// engine, with no move record. Real engine: the kills fall anywhere in a
// real move over ssh, and what is left is counted on both engines.
func TestIntegrationRandomKillsMove(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image := testImage(t, "BOXES_TEST_IMAGE", "hermes-box-lite:test")
	const box = "it-h11c-mv"
	removeWithOneOffs(box)
	t.Cleanup(func() { removeWithOneOffs(box) })
	trials := restoreKillTrials(t)
	remote := testhost.Start(t, testhost.Options{SSH: true, Images: []string{image}})
	t.Setenv("PATH", remote.SSHPath+string(os.PathListSeparator)+os.Getenv("PATH"))
	began := time.Now()
	bin := buildBoxes(t)
	seed := killSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed))

	dir := t.TempDir()
	declare := func(host string) {
		where := ""
		if host != "" {
			where = "host: " + host
		}
		writeFile(t, filepath.Join(dir, "boxes.yaml"), fmt.Sprintf("version: 1\nfleet: it-h11c\nhosts:\n  remote: {docker: %q}\nboxes:\n  %s: {%s}\n", remote.SSH, box, where))
	}
	declare("")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	if r := boxes(t, dir, "exec", box, "--", "sh", "-c", "echo moved-along > /data/home/agent/marker"); r.code != 0 {
		t.Fatalf("writing the marker: %+v", r)
	}
	networks := func(t *testing.T) (local, onRemote int) {
		f := filters.NewArgs(filters.Arg("label", compose.BoxLabel+"="+box))
		ns, err := remote.Client().NetworkList(context.Background(), network.ListOptions{Filters: f})
		if err != nil {
			t.Fatal(err)
		}
		_, _, n := labelled(t, box)
		return n, len(ns)
	}

	// to is where the box moves next: the other engine.
	to := "remote"
	other := func(h string) string {
		if h == "" {
			return "remote"
		}
		return ""
	}
	k := killKind{
		name:  "move",
		setup: func(t *testing.T, dir string) { declare(to) },
		args:  func() []string { return []string{"apply", "--auto-approve", "--confirm-delete", box} },
		left: func(t *testing.T, dir string, plan run) {
			local, onRemote := copies(t, remote, box)
			old := local
			if to == "" {
				old = onRemote
			}
			if old != [2]int{} && (plan.code != 2 || !strings.Contains(plan.stdout, "will be moved")) {
				t.Errorf("the old copy is still there (%v) and the plan does not move the box: %+v", old, plan)
			}
		},
		finish: func(t *testing.T, dir string, _ run) {
			if r := boxes(t, dir, "apply", "--auto-approve", "--confirm-delete", box); r.code != 0 {
				t.Fatalf("apply after the kill: %+v", r)
			}
		},
		check: func(t *testing.T, dir string) (lost, orphans int) {
			if got := marker(t, dir, box); got != "moved-along" {
				lost++
				t.Errorf("marker: %q", got)
			}
			local, onRemote := copies(t, remote, box)
			nLocal, nRemote := networks(t)
			here, gone, nHere, nGone := onRemote, local, nRemote, nLocal
			if to == "" {
				here, gone, nHere, nGone = local, onRemote, nLocal, nRemote
			}
			if here != [2]int{3, 2} || gone != [2]int{} || nHere != 2 || nGone != 0 {
				orphans++
				t.Errorf("moved to %s: containers and volumes %v there and %v on the other engine, networks %d and %d", reconcile.HostLabel(to), here, gone, nHere, nGone)
			}
			if ids := oneOffs(t, box); len(ids) > 0 {
				orphans++
				t.Errorf("throwaway containers hold %s's volumes on the local engine: %v", box, ids)
			}
			if _, ok, _ := statedir.Beside(filepath.Join(dir, "boxes.yaml")).Moves().Get(box); ok {
				orphans++
				t.Errorf("the move record is left")
			}
			return lost, orphans
		},
	}

	// One uninterrupted move first; the moves back take about as long.
	took := timeKind(t, bin, dir, k)
	to = other(to)
	var tally killTally
	for i := 0; i < trials; i++ {
		ok := t.Run(fmt.Sprintf("%02d-move-to-%s", i, hostName(to)), func(t *testing.T) {
			killTrial(t, bin, dir, k, took, rng, &tally)
		})
		if !ok {
			// The box is in no known place: later trials would prove nothing.
			break
		}
		to = other(to)
	}
	t.Logf("random kills of moves: %s (BOXES_KILL_SEED=%d, %s)", tally, seed, time.Since(began).Round(time.Second))
}

func hostName(h string) string {
	if h == "" {
		return "local"
	}
	return h
}
