package cli

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/compose"
)

// An agent that cannot start (here: a PATH without the tools hb needs, so
// it restarts forever) fails apply with its own last words, although its
// executor answers; the next apply tries again. Real engine: the agent
// container really restarts for ever under the engine while its executor
// answers, and its last words are its log.
func TestIntegrationApplyWaitsForTheAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image := testImage(t, "BOXES_TEST_IMAGE", "hermes-box-lite:test")
	const box = "it-h11b-noagent"
	removeBoxes(box)
	t.Cleanup(func() { removeBoxes(box) })
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nboxes:\n  "+box+":\n    env:\n      PATH: /nowhere\n")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	r := boxes(t, dir, "apply", "--auto-approve")
	if r.code != 1 || !strings.Contains(r.stderr, "agent of "+box+": the container is ") ||
		!strings.Contains(r.stderr, "its last log lines: ") || !strings.Contains(r.stderr, "not found") {
		t.Errorf("apply of a box whose agent cannot start: %+v", r)
	}
	t.Logf("apply of a box whose agent cannot start:\n%s", r.stderr)
	if strings.Contains(r.stdout, "ready at") {
		t.Errorf("reported ready: %s", r.stdout)
	}
}

// A recreate onto an image whose agent fails puts the canary back on its
// previous containers, /data intact, and leaves the other box alone; the
// next plan still wants the change. Real engine: the broken image is built
// and fails in its own container, and the containers put back run the old
// image with /data and the executor's published port as they were.
func TestIntegrationBadImageRollsBack(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image := testImage(t, "BOXES_TEST_IMAGE", "hermes-box-lite:test")
	const canary, other, broken = "it-h11b-a", "it-h11b-b", "it-h11b-broken"
	removeBoxes(canary, other)
	t.Cleanup(func() {
		removeBoxes(canary, other)
		_ = exec.Command("docker", "image", "rm", broken).Run()
	})
	// The same image without the agent user: hb init fails, the executor runs.
	build := exec.Command("docker", "build", "-q", "-t", broken, "-")
	build.Stdin = strings.NewReader("FROM " + image + "\nRUN userdel agent\n")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", broken, err, out)
	}
	oldID := dockerOut(t, "image", "inspect", "-f", "{{.Id}}", image)

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nboxes:\n  "+canary+": {}\n  "+other+": {}\n")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("first apply: %+v", r)
	}
	if r := boxes(t, dir, "exec", canary, "--", "sh", "-c", "echo kept > marker"); r.code != 0 {
		t.Fatalf("writing the marker: %+v", r)
	}
	containers := func(box string) string {
		return dockerOut(t, "ps", "-a", "--filter", "label="+compose.BoxLabel+"="+box, "--format", "{{.Names}} {{.State}}")
	}
	otherID := dockerOut(t, "ps", "-aq", "--no-trunc", "--filter", "label="+compose.BoxLabel+"="+other)
	port := dockerOut(t, "port", compose.ProjectName(canary)+"-executor-1")

	if r := boxes(t, dir, "lock", "image", broken); r.code != 0 {
		t.Fatalf("lock image %s: %+v", broken, r)
	}
	r := boxes(t, dir, "apply", "--auto-approve", "--parallelism", "2")
	if r.code != 1 || !strings.Contains(r.stderr, canary+": the new containers did not become ready: ") ||
		!strings.Contains(r.stderr, "this image has no user agent") ||
		!strings.Contains(r.stderr, "the box is back on its previous image and settings") ||
		!strings.Contains(r.stderr, other+": not recreated, left on its current image") {
		t.Fatalf("apply onto a broken image: %+v", r)
	}
	t.Logf("apply onto the broken image:\n%s", r.stderr)

	for _, name := range []string{"agent", "executor"} {
		c := compose.ProjectName(canary) + "-" + name + "-1"
		if got := dockerOut(t, "inspect", "-f", "{{.Image}} {{.State.Status}}", c); got != oldID+" running" {
			t.Errorf("%s after the rollback: %s, want %s running", c, got, oldID)
		}
	}
	if got := containers(canary); strings.Count(got, "\n") != 2 { // agent, executor, gate
		t.Errorf("containers of %s: %s", canary, got)
	}
	if got := dockerOut(t, "port", compose.ProjectName(canary)+"-executor-1"); got != port {
		t.Errorf("executor published on %s after the rollback, was %s", got, port)
	}
	if r := boxes(t, dir, "exec", canary, "--", "cat", "marker"); r.stdout != "kept\n" {
		t.Errorf("marker after the rollback: %+v", r)
	}
	if got := dockerOut(t, "ps", "-aq", "--no-trunc", "--filter", "label="+compose.BoxLabel+"="+other); got != otherID {
		t.Errorf("%s was touched: %s, was %s", other, got, otherID)
	}
	r = boxes(t, dir, "plan", "--detailed-exitcode")
	if r.code != 2 || strings.Count(r.stdout, "must be replaced") != 2 {
		t.Errorf("plan after the rollback: %+v", r)
	}
	// Back on the good image, everything converges.
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	if r := boxes(t, dir, "plan", "--detailed-exitcode"); r.code != 0 {
		t.Errorf("plan back on the old image: %+v", r)
	}
}
