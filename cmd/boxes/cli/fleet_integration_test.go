package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-box/boxes/compose"
)

// Boxes of the fleet tests are named fl-*, apart from every other test's.
var flBoxes = []string{"fl-a", "fl-a2", "fl-b"}

// twoFleets applies fleet team-a (fl-a, fl-a2) and fleet team-b (fl-b) from
// two directories onto one engine.
func twoFleets(t *testing.T) (dirA, dirB string) {
	t.Helper()
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image := testImage(t, "BOXES_TEST_IMAGE", "hermes-box-lite:test")
	removeBoxes(flBoxes...)
	t.Cleanup(func() { removeBoxes(flBoxes...) })
	dirA, dirB = t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dirA, "boxes.yaml"), "version: 1\nfleet: team-a\nboxes:\n  fl-a: {}\n  fl-a2: {}\n")
	writeFile(t, filepath.Join(dirB, "boxes.yaml"), "version: 1\nfleet: team-b\nboxes:\n  fl-b: {}\n")
	for _, dir := range []string{dirA, dirB} {
		if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
			t.Fatalf("lock image: %+v", r)
		}
		if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
			t.Fatalf("apply in %s: %+v", dir, r)
		}
	}
	return dirA, dirB
}

// TestIntegrationFleets: two fleets on one engine, each with its label on
// every container, volume and network, neither planning the other's boxes,
// every command on one box refusing the other fleet's, ls and ls --all,
// and a plan deleting a box with its volume's size, as fast as one
// without. Real engine: the labels compose puts on what it makes, the
// other fleet's /data untouched, and the volume's size and what reading it
// costs a plan come from the engine.
func TestIntegrationFleets(t *testing.T) {
	dirA, dirB := twoFleets(t)

	for _, kind := range []string{"container", "volume", "network"} {
		args := []string{kind, "ls", "-q", "--filter", "label=" + compose.BoxLabel + "=fl-b", "--filter", "label=" + compose.FleetLabel + "=team-b"}
		if kind == "container" {
			args = append(args, "-a")
		}
		want := map[string]int{"container": 3, "volume": 2, "network": 2}[kind]
		if got := len(strings.Fields(dockerOut(t, args...))); got != want {
			t.Errorf("%ss of fl-b labelled %s=team-b: %d, want %d", kind, compose.FleetLabel, got, want)
		}
	}
	for _, dir := range []string{dirA, dirB} {
		if r := boxes(t, dir, "plan", "--detailed-exitcode"); r.code != 0 || !strings.Contains(r.stdout, "No changes.") {
			t.Errorf("plan in %s sees the other fleet: %+v", filepath.Base(dir), r)
		}
	}

	writeFile(t, filepath.Join(dirB, "boxes.yaml"), "version: 1\nfleet: team-b\nboxes:\n  fl-b: {}\n  fl-a: {}\n")
	r := boxes(t, dirB, "plan")
	if r.code != 1 || !strings.Contains(r.stderr, "box fl-a is fleet team-a's on the local engine") {
		t.Errorf("plan declaring another fleet's box: %+v", r)
	}
	writeFile(t, filepath.Join(dirB, "boxes.yaml"), "version: 1\nfleet: team-b\nboxes:\n  fl-b: {}\n")

	refusesOtherFleet(t, dirA, dirB)

	r = boxes(t, dirA, "ls")
	if r.code != 0 || strings.Contains(r.stdout, "fl-b") {
		t.Errorf("ls of team-a lists team-b's box: %+v", r)
	}
	r = boxes(t, dirA, "ls", "--all")
	if r.code != 0 || !strings.Contains(r.stdout, "team-b") || !strings.Contains(r.stdout, "fl-b") || !strings.Contains(r.stdout, "fl-a") {
		t.Errorf("ls --all: %+v", r)
	}

	// Fast plans with deletes: plan without, then with fl-a2 undeclared.
	timed := func(dir string) (run, time.Duration) {
		best := time.Hour
		var r run
		for range 3 {
			start := time.Now()
			r = boxes(t, dir, "plan")
			best = min(best, time.Since(start))
		}
		return r, best
	}
	dockerOut(t, "exec", "hbl-fl-a2-agent-1", "sh", "-c", "head -c 3000000 /dev/urandom > /data/blob")
	_, without := timed(dirA)
	writeFile(t, filepath.Join(dirA, "boxes.yaml"), "version: 1\nfleet: team-a\nboxes:\n  fl-a: {}\n")
	r, with := timed(dirA)
	t.Logf("plan without a delete %v, with one %v (%.2fx)", without, with, float64(with)/float64(without))
	if !strings.Contains(r.stdout, "volume hbl-fl-a2_agent-data (2.") || !strings.Contains(r.stdout, "Plan: 0 to create, 0 to recreate, 0 to start, 0 to stop, 1 to delete.") {
		t.Errorf("plan deleting fl-a2:\n%s\n%s", r.stdout, r.stderr)
	}
	// A guard against the engine-wide disk-usage call (9 s on a busy engine),
	// loose enough for a loaded machine; the figures are in the log.
	if with > 2*without+time.Second {
		t.Errorf("a plan with a delete took %v, without %v", with, without)
	}
	dockerOut(t, "stop", "hbl-fl-a2-agent-1", "hbl-fl-a2-executor-1")
	if r := boxes(t, dirA, "plan"); !strings.Contains(r.stdout, "(size not read: the box is not running)") {
		t.Errorf("plan deleting a stopped box:\n%s", r.stdout)
	}
	if r := boxes(t, dirA, "apply", "--auto-approve", "--confirm-delete", "fl-a2"); r.code != 0 {
		t.Fatalf("apply deleting fl-a2: %+v", r)
	}
	if r := boxes(t, dirB, "plan", "--detailed-exitcode"); r.code != 0 {
		t.Errorf("team-b after team-a's delete: %+v", r)
	}
}

// refusesOtherFleet: from fleet team-b's directory, every command that acts
// on one box refuses team-a's fl-a, naming team-a, before anything changes,
// whether or not team-b declares the name. Real engine: what is proven is
// that fl-a's containers, volumes and data are untouched on the engine.
func refusesOtherFleet(t *testing.T, dirA, dirB string) {
	t.Helper()
	t.Setenv("BOXES_PASSPHRASE", "correct horse battery staple")
	dockerOut(t, "exec", "hbl-fl-a-agent-1", "sh", "-c", "echo keep > /data/home/agent/keep")
	archive := filepath.Join(t.TempDir(), "fl-a.tar.s2.age")
	if r := boxes(t, dirA, "save", "fl-a", "-o", archive); r.code != 0 {
		t.Fatalf("save in team-a: %+v", r)
	}
	// enter, which wants a terminal first, reaches the box as exec does.
	commands := [][]string{
		{"rm", "fl-a", "--confirm", "fl-a"}, {"stop", "fl-a"}, {"start", "fl-a"},
		{"save", "fl-a", "-o", filepath.Join(dirB, "fl-a.tar.s2.age")}, {"exec", "fl-a", "--", "true"},
		{"logs", "fl-a"}, {"open", "fl-a"}, {"doctor", "fl-a"},
	}
	for _, declared := range []string{"", "  fl-a: {}\n"} {
		writeFile(t, filepath.Join(dirB, "boxes.yaml"), "version: 1\nfleet: team-b\nboxes:\n  fl-b: {}\n"+declared)
		cmds := commands
		if declared != "" {
			cmds = append(cmds, []string{"load", archive, "fl-a"})
		}
		for _, args := range cmds {
			r := boxes(t, dirB, args...)
			if r.code == 0 || !strings.Contains(r.stderr, "box fl-a on the local engine is fleet team-a's, not fleet team-b's; nothing was changed") {
				t.Errorf("boxes %s from team-b (declared %v): %+v", strings.Join(args, " "), declared != "", r)
			}
		}
	}
	writeFile(t, filepath.Join(dirB, "boxes.yaml"), "version: 1\nfleet: team-b\nboxes:\n  fl-b: {}\n")
	if got := dockerOut(t, "exec", "hbl-fl-a-agent-1", "cat", "/data/home/agent/keep"); got != "keep" {
		t.Errorf("fl-a's file after team-b's commands: %q", got)
	}
	if got := dockerOut(t, "inspect", "-f", "{{.State.Status}}", "hbl-fl-a-agent-1", "hbl-fl-a-executor-1"); got != "running\nrunning" {
		t.Errorf("fl-a's containers after team-b's commands: %q", got)
	}
	if r := boxes(t, dirA, "plan", "--detailed-exitcode"); r.code != 0 {
		t.Errorf("team-a's plan after team-b's commands: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(dirB, "fl-a.tar.s2.age")); !os.IsNotExist(err) {
		t.Errorf("team-b's save wrote an archive of team-a's box: %v", err)
	}
}

// A box made before fleets existed (no boxes.fleet label) belongs to the
// fleet that declares it; undeclared, no plan touches it. Real engine:
// only that the volumes are made by hand with the docker CLI as an older
// boxes left them; a fake command making unlabelled volumes would prove
// the rest.
func TestIntegrationFleetUnlabelled(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image := testImage(t, "BOXES_TEST_IMAGE", "hermes-box-lite:test")
	removeBoxes("fl-old")
	t.Cleanup(func() { removeBoxes("fl-old") })
	// What an older boxes made: the labels of today minus the fleet.
	for _, v := range []string{compose.AgentVolume, compose.ExecutorVolume} {
		dockerOut(t, "volume", "create", "--label", compose.ManagedLabel+"=1", "--label", compose.BoxLabel+"=fl-old", compose.VolumeName("fl-old", v))
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nfleet: team-a\nboxes: {}\n")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	if r := boxes(t, dir, "plan", "--detailed-exitcode"); r.code != 0 {
		t.Errorf("plan with an unlabelled undeclared box: %+v", r)
	}
	if r := boxes(t, dir, "ls", "--all"); !strings.Contains(r.stdout, "fl-old") || !strings.Contains(r.stdout, "(no fleet)") {
		t.Errorf("ls --all:\n%s", r.stdout)
	}
	// Undeclared, it is no fleet's: only rm reaches it, and says so.
	if r := boxes(t, dir, "stop", "fl-old"); r.code == 0 || !strings.Contains(r.stderr, "box fl-old on the local engine belongs to no fleet") {
		t.Errorf("stop of a box of no fleet: %+v", r)
	}
	if r := boxes(t, dir, "rm", "fl-old"); r.code == 0 || !strings.Contains(r.stdout, "box fl-old belongs to no fleet") || !strings.Contains(r.stderr, "nothing was changed") {
		t.Errorf("rm of a box of no fleet, unconfirmed: %+v", r)
	}
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nfleet: team-a\nboxes: {fl-old: {}}\n")
	if r := boxes(t, dir, "plan"); r.code != 0 || !strings.Contains(r.stdout, "containers were never created, or were removed since (volumes kept)") {
		t.Errorf("plan declaring the unlabelled box: %+v", r)
	}
}

// TestIntegrationDrift: what docker does to a box behind boxes' back
// (stop, pause, a crash loop, a network disconnect, a container left under
// compose's temporary name) is in the next plan with its cause, and apply
// converges. Real engine: the states the engine reports for a paused
// container and a restart loop with its count, the name compose gives a
// container mid-recreate, and that compose converges each of them.
func TestIntegrationDrift(t *testing.T) {
	dirA, _ := twoFleets(t)
	const agent = "hbl-fl-a-agent-1"
	plan := func() run { return boxes(t, dirA, "plan") }
	converge := func(what string) {
		t.Helper()
		if r := boxes(t, dirA, "apply", "--auto-approve"); r.code != 0 {
			t.Fatalf("apply after %s: %+v", what, r)
		}
		if r := boxes(t, dirA, "plan", "--detailed-exitcode"); r.code != 0 {
			t.Fatalf("plan after converging %s: %+v", what, r)
		}
	}

	// docker stop, as docker compose -p hbl-fl-a stop does.
	dockerOut(t, "stop", agent, "hbl-fl-a-executor-1")
	if r := plan(); !strings.Contains(r.stdout, `~ box "fl-a"`) || !strings.Contains(r.stdout, "state: stopped → running") {
		t.Errorf("plan after docker stop:\n%s%s", r.stdout, r.stderr)
	}
	converge("docker stop")

	dockerOut(t, "pause", agent)
	if r := plan(); !strings.Contains(r.stdout, "agent is paused") {
		t.Errorf("plan after docker pause:\n%s%s", r.stdout, r.stderr)
	}
	converge("docker pause")

	// A crash loop: the entrypoint is gone, the agent is killed, Docker
	// restarts it for ever with exit 127.
	dockerOut(t, "exec", "-u", "0", agent, "mv", "/usr/local/bin/hb", "/usr/local/bin/hb.gone")
	_ = exec.Command("docker", "exec", "-u", "0", agent, "kill", "-TERM", "1").Run()
	deadline := time.Now().Add(60 * time.Second)
	for {
		// The first restart follows the agent's own clean exit; from the
		// second on, it is the missing entrypoint.
		st := dockerOut(t, "inspect", "-f", "{{.State.Status}} {{.RestartCount}}", agent)
		if n, _ := strconv.Atoi(strings.TrimPrefix(st, "restarting ")); strings.HasPrefix(st, "restarting") && n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent never crash-looped: %s", st)
		}
		time.Sleep(200 * time.Millisecond)
	}
	r := plan()
	if !strings.Contains(r.stdout, "-/+ box \"fl-a\"") || !regexp.MustCompile(`agent is restarting \((exit [0-9]+, )?[0-9]+ restarts\)`).MatchString(r.stdout) {
		t.Errorf("plan of a crash loop:\n%s%s", r.stdout, r.stderr)
	}
	converge("a crash loop")

	// The executor cut off from the box's network.
	dockerOut(t, "network", "disconnect", compose.NetworkName("fl-a"), "hbl-fl-a-executor-1")
	if r := plan(); !strings.Contains(r.stdout, "executor is not connected to network hbl-fl-a_default") {
		t.Errorf("plan after network disconnect:\n%s%s", r.stdout, r.stderr)
	}
	converge("a network disconnect")

	// A recreate killed after compose removed the old container and before
	// it renamed the new one, ID_NAME, to NAME.
	id := dockerOut(t, "inspect", "-f", "{{.Id}}", agent)
	dockerOut(t, "rename", agent, id[:12]+"_"+agent)
	if r := plan(); !strings.Contains(r.stdout, "-/+ box \"fl-a\"") || !strings.Contains(r.stdout, "(an interrupted recreate)") {
		t.Errorf("plan after a rename:\n%s%s", r.stdout, r.stderr)
	}
	converge("a container left under compose's temporary name")
	if got := dockerOut(t, "inspect", "-f", "{{.Name}}", agent); got != "/"+agent {
		t.Errorf("agent after converging: %q", got)
	}
}
