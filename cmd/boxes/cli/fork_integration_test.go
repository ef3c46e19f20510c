package cli

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/pool"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/workspace"
)

// workFiles writes, in a box's work directory, a file only its owner
// reads, a symlink, a hard link, a file with an old time, a directory of
// mode 0700 and random bytes, and a file root owns.
func workFiles(t *testing.T, dir, box string) {
	t.Helper()
	if r := boxes(t, dir, "exec", box, "--", "sh", "-c", `set -e
mkdir -p work/private
printf 'first\n' > work/notes.txt
touch -d 2020-01-02T03:04:05Z work/notes.txt
printf 's3cret' > work/secret && chmod 600 work/secret
ln -s notes.txt work/link
ln work/notes.txt work/hard
head -c 300000 /dev/urandom > 'work/blob with spaces'
chmod 700 work/private && printf x > work/private/x`); r.code != 0 {
		t.Fatalf("writing the files: %+v", r)
	}
	dockerOut(t, "exec", "-u", "0", compose.ContainerName(box, compose.AgentService), "sh", "-c",
		"printf root > /data/home/agent/work/rootfile && chmod 640 /data/home/agent/work/rootfile")
}

// Forks: a box seeded from a snapshot, one from a box as it is, and a
// pool whose boxes are made from a snapshot and reset to it; each fork's
// /data is its source's byte for byte (owners, modes, times, links), its
// token its own; the box copied as it is was quiesced and is resumed; a
// holder's file goes with the release. Real engine: the helper copies a
// real volume with cp -a, the forks' executors answer only their own
// tokens, and hb init runs on the copied data.
func TestIntegrationForks(t *testing.T) {
	image, _ := startIntegration(t)
	const base, fromSnap, fromBox, poolName = "it-fbase", "it-fsnap", "it-fcopy", "it-fpool"
	all := append([]string{base, fromSnap, fromBox}, poolBoxes(poolName)...)
	removeBoxes(all...)
	t.Cleanup(func() { removeBoxes(all...); removePool(poolName) })
	vol := func(box string) string { return compose.VolumeName(box, compose.AgentVolume) }

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nboxes:\n  "+base+": {}\n")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	workFiles(t, dir, base)
	clean := workListing(t, image, vol(base), ".")
	if r := boxes(t, dir, "snapshot", base, "clean"); r.code != 0 {
		t.Fatalf("snapshot: %+v", r)
	}
	if r := boxes(t, dir, "exec", base, "--", "sh", "-c", "printf later > work/notes.txt && printf more > work/added"); r.code != 0 {
		t.Fatalf("changing /data: %+v", r)
	}
	later := workListing(t, image, vol(base), ".")

	writeFile(t, filepath.Join(dir, "boxes.yaml"), fmt.Sprintf(`version: 1
pools:
  %[4]s: {size: 1, from: "%[1]s@clean"}
boxes:
  %[1]s: {}
  %[2]s: {from: "%[1]s@clean"}
  %[3]s: {from: %[1]s}
`, base, fromSnap, fromBox, poolName))
	r := boxes(t, dir, "plan")
	if r.code != 0 || !strings.Contains(r.stdout, "seeded from snapshot clean of box "+base) || !strings.Contains(r.stdout, "seeded from box "+base+"'s /data (copied paused)") {
		t.Fatalf("plan: %+v", r)
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	member := spec.PoolBoxName(poolName, 1)
	for box, want := range map[string]string{fromSnap: clean, fromBox: later, member: clean, base: later} {
		if got := workListing(t, image, vol(box), "."); got != want {
			t.Errorf("%s's /data:\n%s\nwant:\n%s", box, got, want)
		}
	}
	thawed(t, base, "after its copy")
	baseToken := mustToken(t, dir, base)
	for _, box := range []string{fromSnap, fromBox, member} {
		tok := mustToken(t, dir, box)
		url := executorURL(t, dir, box)
		if tok == baseToken || statusWith(t, url, tok) != 200 || statusWith(t, url, baseToken) != 401 {
			t.Errorf("%s: its token is %s, or its executor answers the wrong one", box, map[bool]string{true: "base's", false: "its own"}[tok == baseToken])
		}
		if r := boxes(t, dir, "doctor", box); r.code != 0 {
			t.Errorf("doctor %s: %+v", box, r)
		}
	}
	if r := boxes(t, dir, "exec", fromSnap, "--", "cat", "work/notes.txt"); r.stdout != "first\n" {
		t.Errorf("the fork of the snapshot reads %+v", r)
	}
	if r := boxes(t, dir, "plan", "--detailed-exitcode"); r.code != 0 {
		t.Errorf("plan after the forks: %+v", r)
	}

	// A holder's file goes with the release: the box is the snapshot again.
	r = boxes(t, dir, "lease", poolName, "--holder", "it", "--json")
	var row pool.LeaseRow
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &row) != nil || row.Box != member {
		t.Fatalf("lease: %+v", r)
	}
	if r := boxes(t, dir, "exec", member, "--", "sh", "-c", "printf mine > work/holder && rm work/notes.txt"); r.code != 0 {
		t.Fatalf("the holder's write: %+v", r)
	}
	if r := boxes(t, dir, "release", member); r.code != 0 {
		t.Fatalf("release: %+v", r)
	}
	if got := workListing(t, image, vol(member), "."); got != clean {
		t.Errorf("%s after its release:\n%s\nwant the snapshot:\n%s", member, got, clean)
	}

	// The snapshot the pool is made from stays.
	if r := boxes(t, dir, "snapshot", "rm", base, "clean", "--confirm", base); r.code != 1 || !strings.Contains(r.stderr, "boxes.yaml seeds box "+fromSnap+" and pool "+poolName) {
		t.Errorf("snapshot rm of the pool's snapshot: %+v", r)
	}
}

// Kills: boxes snapshot SIGKILLed at random moments, and an apply
// SIGKILLed while it seeds a fork. After each, the next command thaws the
// box a killed snapshot froze, a snapshot is either whole or shown
// incomplete (and removed by snapshot rm), and the next apply makes the
// fork whole from its snapshot. BOXES_KILL_TRIALS trials of each (2 in
// make test). Real engine: the kills land between a real freeze, a
// helper container's copy and its removal.
func TestIntegrationForkKills(t *testing.T) {
	image, _ := startIntegration(t)
	const base, fork = "it-kbase", "it-kfork"
	removeBoxes(base, fork)
	t.Cleanup(func() { removeBoxes(base, fork) })
	bin := buildBoxes(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nboxes:\n  "+base+": {}\n")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	workFiles(t, dir, base)
	if r := boxes(t, dir, "exec", base, "--", "sh", "-c", "head -c 50000000 /dev/urandom > work/big"); r.code != 0 {
		t.Fatalf("writing: %+v", r)
	}
	want := workListing(t, image, compose.VolumeName(base, compose.AgentVolume), ".")
	// The kills are drawn over the length of a whole snapshot, timed first.
	begin := time.Now()
	if out, err := exec.Command(bin, "-f", filepath.Join(dir, "boxes.yaml"), "snapshot", base, "timed").CombinedOutput(); err != nil {
		t.Fatalf("snapshot: %v\n%s", err, out)
	}
	whole := time.Since(begin)
	if r := boxes(t, dir, "snapshot", "rm", base, "timed", "--confirm", base); r.code != 0 {
		t.Fatalf("snapshot rm: %+v", r)
	}
	trials := trialsFrom(t, "BOXES_KILL_TRIALS", 2)
	seed := killSeed(t)
	rng := rand.New(rand.NewPCG(seed, 21))
	start := time.Now()
	made, incomplete, gone := 0, 0, 0
	for i := range trials {
		label := fmt.Sprintf("k%d", i)
		cmd := exec.Command(bin, "-f", filepath.Join(dir, "boxes.yaml"), "snapshot", base, label)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(time.Duration(rng.Int64N(int64(whole)))):
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-done
		}
		// The next command on the box thaws it.
		if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
			t.Fatalf("trial %d: apply after the kill: %+v", i, r)
		}
		thawed(t, base, fmt.Sprintf("trial %d", i))
		rows := snapshotRows(t, dir, base)
		s, ok := rows[label]
		switch {
		case !ok:
			gone++
		case s.Incomplete:
			// A helper left: it finishes the copy or is removed with the
			// snapshot; either way snapshot rm deletes it.
			incomplete++
			if r := boxes(t, dir, "snapshot", "rm", base, label, "--confirm", base); r.code != 0 {
				t.Errorf("trial %d: snapshot rm of the incomplete snapshot: %+v", i, r)
			}
		default:
			made++
			if got := workListing(t, image, s.Volume, "data"); got != want {
				t.Errorf("trial %d: the snapshot a kill left whole differs:\n%s\nwant:\n%s", i, got, want)
			}
		}
	}
	t.Logf("snapshot kills: %d trials over a snapshot of %s, %d whole, %d incomplete and removed, %d never made (BOXES_KILL_SEED=%d, %s)",
		trials, whole.Round(time.Millisecond), made, incomplete, gone, seed, time.Since(start).Round(time.Second))

	if r := boxes(t, dir, "snapshot", base, "clean"); r.code != 0 {
		t.Fatalf("snapshot: %+v", r)
	}
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nboxes:\n  "+base+": {}\n  "+fork+": {from: \""+base+"@clean\"}\n")
	for i := range trials {
		killAt(t, bin, dir, fork+": seeding /data", 1)
		// Killed as the copy begins: the helper may go on and finish, or be
		// left. The plan seeds the fork again, whatever state it is in.
		if r := boxes(t, dir, "plan"); r.code != 0 || !strings.Contains(r.stdout, "fork incomplete: seeded again from snapshot clean of box "+base) {
			t.Errorf("trial %d: plan after the kill: %+v", i, r)
		}
		if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
			t.Fatalf("trial %d: apply after the kill: %+v", i, r)
		}
		if got := workListing(t, image, compose.VolumeName(fork, compose.AgentVolume), "."); got != want {
			t.Errorf("trial %d: the fork's /data:\n%s\nwant:\n%s", i, got, want)
		}
		if r := boxes(t, dir, "plan", "--detailed-exitcode"); r.code != 0 {
			t.Errorf("trial %d: plan after: %+v", i, r)
		}
		if r := boxes(t, dir, "rm", fork, "--confirm", fork); r.code != 0 {
			t.Fatalf("rm: %+v", r)
		}
	}
}

// snapshotRows are box's snapshots in dir, by label.
func snapshotRows(t *testing.T, dir, box string) map[string]workspace.SnapshotRow {
	t.Helper()
	r := boxes(t, dir, "snapshots", box, "--json")
	var rows workspace.SnapshotRows
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &rows) != nil {
		t.Fatalf("snapshots: %+v", r)
	}
	out := map[string]workspace.SnapshotRow{}
	for _, s := range rows {
		out[s.Label] = s
	}
	return out
}
