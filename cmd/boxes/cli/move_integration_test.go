package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/internal/testhost"
)

const moveBox = "it-h9-mv"

// startMove skips under -short, finds the test image, and removes the
// test's boxes from the local engine before and after it.
func startMove(t *testing.T, names ...string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image := testImage(t, "BOXES_TEST_IMAGE", "hermes-box-lite:test")
	removeBoxes(names...)
	t.Cleanup(func() { removeBoxes(names...) })
	return image
}

// copies counts box's labelled containers and volumes on the local engine
// and on remote.
func copies(t *testing.T, remote *testhost.Engine, box string) (local, onRemote [2]int) {
	t.Helper()
	f := "label=" + compose.BoxLabel + "=" + box
	if out := dockerOut(t, "ps", "-a", "-q", "--filter", f); out != "" {
		local[0] = len(strings.Fields(out))
	}
	if out := dockerOut(t, "volume", "ls", "-q", "--filter", f); out != "" {
		local[1] = len(strings.Fields(out))
	}
	ctx := context.Background()
	args := filters.NewArgs(filters.Arg("label", compose.BoxLabel+"="+box))
	cs, err := remote.Client().ContainerList(ctx, container.ListOptions{All: true, Filters: args})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := remote.Client().VolumeList(ctx, volume.ListOptions{Filters: args})
	if err != nil {
		t.Fatal(err)
	}
	onRemote = [2]int{len(cs), len(vs.Volumes)}
	return local, onRemote
}

// moveConfig declares box on host ("" is the local engine) beside remote.
func moveConfig(t *testing.T, dir string, remote *testhost.Engine, box, host string) {
	t.Helper()
	where := ""
	if host != "" {
		where = "host: " + host
	}
	writeFile(t, filepath.Join(dir, "boxes.yaml"), fmt.Sprintf("version: 1\nfleet: it-h9\nhosts:\n  remote: {docker: %q}\nboxes:\n  %s: {%s}\n", remote.SSH, box, where))
}

func marker(t *testing.T, dir, box string) string {
	t.Helper()
	r := boxes(t, dir, "exec", box, "--", "cat", "/data/home/agent/marker")
	if r.code != 0 {
		t.Fatalf("reading the marker: %+v", r)
	}
	return strings.TrimSpace(r.stdout)
}

// TestIntegrationMove moves a box with a marker in /data from the local
// engine to a remote one that lacks the image, and back: the marker
// arrives, the old copy stays (stopped) until its delete is confirmed, and
// then it is gone. Real engine: /data is saved from one engine and
// restored on a second dockerd reached over ssh, the image streamed there
// first, and the marker is read back inside the new copy.
func TestIntegrationMove(t *testing.T) {
	image := startMove(t, moveBox)
	remote := testhost.Start(t, testhost.Options{SSH: true})
	t.Setenv("PATH", remote.SSHPath+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir := t.TempDir()
	moveConfig(t, dir, remote, moveBox, "")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	if r := boxes(t, dir, "exec", moveBox, "--", "sh", "-c", "echo moved-with-its-data > /data/home/agent/marker"); r.code != 0 {
		t.Fatalf("writing the marker: %+v", r)
	}

	moveConfig(t, dir, remote, moveBox, "remote")
	plan := boxes(t, dir, "plan", "--detailed-exitcode")
	if plan.code != 2 || !strings.Contains(plan.stdout, "will be moved") || !strings.Contains(plan.stdout, "host: local → remote") ||
		!strings.Contains(plan.stdout, "streamed from local to remote (") || !strings.Contains(plan.stdout, "1 to move") {
		t.Fatalf("plan of the move: %+v", plan)
	}
	t.Logf("plan:\n%s", plan.stdout)
	js := boxes(t, dir, "plan", "--json")
	var jp struct {
		Boxes []struct {
			Action string
			Move   struct{ From, To, Stage string }
		}
	}
	if err := json.Unmarshal([]byte(js.stdout), &jp); err != nil || len(jp.Boxes) != 1 || jp.Boxes[0].Action != "move" || jp.Boxes[0].Move.To != "remote" || jp.Boxes[0].Move.Stage != "save" {
		t.Fatalf("plan --json: %v %+v", err, js)
	}

	// Without the confirmation the move stops once the new copy is verified.
	r := boxes(t, dir, "apply", "--auto-approve")
	if r.code != 0 {
		t.Fatalf("apply of the move: %+v", r)
	}
	t.Logf("apply:\n%s", r.stdout)
	if got := marker(t, dir, moveBox); got != "moved-with-its-data" {
		t.Fatalf("marker on the remote: %q", got)
	}
	local, onRemote := copies(t, remote, moveBox)
	if local[0] != 3 || onRemote[0] != 3 {
		t.Fatalf("after an unconfirmed move: local %v, remote %v", local, onRemote)
	}
	if out := dockerOut(t, "ps", "-q", "--filter", "label="+compose.BoxLabel+"="+moveBox); out != "" {
		t.Errorf("the old copy still runs: %s", out)
	}
	plan = boxes(t, dir, "plan", "--detailed-exitcode")
	if plan.code != 2 || !strings.Contains(plan.stdout, "delete the old copy on local") {
		t.Fatalf("plan after an unconfirmed move: %+v", plan)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, ".boxes", "secrets", moveBox+"-*.move-key"))
	if len(matches) != 1 {
		t.Fatalf("move keys: %v", matches)
	}
	if fi, err := os.Stat(matches[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("move key %s: %v %v", matches[0], fi.Mode(), err)
	}

	if r := boxes(t, dir, "apply", "--auto-approve", "--confirm-delete", moveBox); r.code != 0 {
		t.Fatalf("apply confirming the delete: %+v", r)
	}
	local, onRemote = copies(t, remote, moveBox)
	if local != [2]int{} || onRemote != [2]int{3, 2} {
		t.Fatalf("after the confirmed delete: local %v, remote %v", local, onRemote)
	}
	if r := boxes(t, dir, "plan", "--detailed-exitcode"); r.code != 0 {
		t.Fatalf("plan after the move: %+v", r)
	}

	// And back, through a saved plan, confirmed at once.
	moveConfig(t, dir, remote, moveBox, "")
	saved := filepath.Join(dir, "move.plan")
	if r := boxes(t, dir, "plan", "-out", saved); r.code != 0 {
		t.Fatalf("plan -out of the move back: %+v", r)
	}
	if r := boxes(t, dir, "apply", saved, "--confirm-delete", moveBox); r.code != 0 {
		t.Fatalf("apply of the saved move back: %+v", r)
	}
	if got := marker(t, dir, moveBox); got != "moved-with-its-data" {
		t.Fatalf("marker back on the local engine: %q", got)
	}
	local, onRemote = copies(t, remote, moveBox)
	if local != [2]int{3, 2} || onRemote != [2]int{} {
		t.Fatalf("after the move back: local %v, remote %v", local, onRemote)
	}
	if r := boxes(t, dir, "plan", "--detailed-exitcode"); r.code != 0 {
		t.Fatalf("plan after the move back: %+v", r)
	}
	archives, _ := filepath.Glob(filepath.Join(dir, "backups", moveBox+"-*"+archive.Ext))
	if len(archives) != 2 {
		t.Errorf("archives kept as backups: %v", archives)
	}
}

// killApplyAt runs apply with args and SIGKILLs it when a progress line
// containing step appears.
func killApplyAt(t *testing.T, bin, dir, step string, args ...string) {
	t.Helper()
	killApplyAfter(t, bin, dir, step, 0, args...)
}

// killApplyAfter is killApplyAt, the kill sent delay after the line.
func killApplyAfter(t *testing.T, bin, dir, step string, delay time.Duration, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-f", filepath.Join(dir, "boxes.yaml"), "apply", "--auto-approve"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var seen []string
	killed := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if strings.Contains(sc.Text(), step) {
			time.Sleep(delay)
			_ = cmd.Process.Kill()
			killed = true
			break
		}
	}
	_ = cmd.Wait()
	if !killed {
		t.Fatalf("apply finished before %q:\n%s", step, strings.Join(seen, "\n"))
	}
}

// TestIntegrationMoveKilled SIGKILLs apply at several points of a move: the
// next plan shows the move in progress, the next apply finishes it, the
// marker survives and exactly one copy remains. Real engine: the kills cut
// a real save, restore, check and delete between two engines over ssh.
func TestIntegrationMoveKilled(t *testing.T) {
	image := startMove(t, moveBox)
	bin := buildBoxes(t)
	remote := testhost.Start(t, testhost.Options{SSH: true, Images: []string{image}})
	t.Setenv("PATH", remote.SSHPath+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir := t.TempDir()
	moveConfig(t, dir, remote, moveBox, "")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	if r := boxes(t, dir, "exec", moveBox, "--", "sh", "-c", "echo survives-kills > /data/home/agent/marker"); r.code != 0 {
		t.Fatalf("writing the marker: %+v", r)
	}
	host := ""
	for _, c := range []struct {
		name, step, plan string
	}{
		{"during the save", "saving: streaming /data", "the save was cut short"},
		{"after the create on the new host", "restoring /data on", "remove the unverified copy"},
		{"after the restore", "checking the restored data", "remove the unverified copy"},
		{"before the delete", "deleting the old copy", "delete the old copy on"},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "-"), func(t *testing.T) {
			from := host
			if host == "" {
				host = "remote"
			} else {
				host = ""
			}
			moveConfig(t, dir, remote, moveBox, host)
			killApplyAt(t, bin, dir, c.step, "--confirm-delete", moveBox)
			plan := boxes(t, dir, "plan", "--detailed-exitcode")
			if plan.code != 2 || !strings.Contains(plan.stdout, "will be moved") || !strings.Contains(plan.stdout, c.plan) {
				t.Fatalf("plan after a kill %s: %+v", c.name, plan)
			}
			t.Logf("plan after a kill %s:\n%s", c.name, plan.stdout)
			if r := boxes(t, dir, "apply", "--auto-approve", "--confirm-delete", moveBox); r.code != 0 {
				t.Fatalf("apply after a kill %s: %+v", c.name, r)
			}
			if r := boxes(t, dir, "plan", "--detailed-exitcode"); r.code != 0 {
				t.Fatalf("plan after finishing the move: %+v", r)
			}
			if got := marker(t, dir, moveBox); got != "survives-kills" {
				t.Fatalf("marker after a kill %s: %q", c.name, got)
			}
			local, onRemote := copies(t, remote, moveBox)
			want, gone := onRemote, local
			if host == "" {
				want, gone = local, onRemote
			}
			if want != [2]int{3, 2} || gone != [2]int{} {
				t.Fatalf("copies after a kill %s (moved from %q to %q): local %v, remote %v", c.name, from, host, local, onRemote)
			}
		})
	}
}

// TestIntegrationMoveKilledStreamingImage: apply is SIGKILLed while it
// streams the image to a new host that lacks it, before the move it is
// for: the next plan shows the move again, the next apply streams the
// image again and does the move, the marker survives, and exactly one
// copy remains. Real engine: the kill cuts a real image load into a second
// dockerd, which may keep part of it.
func TestIntegrationMoveKilledStreamingImage(t *testing.T) {
	const box = "it-h9b-mv"
	image := startMove(t, box)
	bin := buildBoxes(t)
	remote := testhost.Start(t, testhost.Options{SSH: true}) // without the image
	t.Setenv("PATH", remote.SSHPath+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir := t.TempDir()
	moveConfig(t, dir, remote, box, "")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	if r := boxes(t, dir, "exec", box, "--", "sh", "-c", "echo survives-a-cut-stream > /data/home/agent/marker"); r.code != 0 {
		t.Fatalf("writing the marker: %+v", r)
	}
	moveConfig(t, dir, remote, box, "remote")
	// A moment into the stream, so that the remote has part of it.
	killApplyAfter(t, bin, dir, "streaming image", 300*time.Millisecond, "--confirm-delete", box)
	// The image travels by ID, untagged.
	id := dockerOut(t, "image", "inspect", "-f", "{{.Id}}", image)
	_, err := remote.Client().ImageInspect(context.Background(), id)
	t.Logf("after the kill the remote has the image: %v (%v)", err == nil, err)
	plan := boxes(t, dir, "plan", "--detailed-exitcode")
	if plan.code != 2 || !strings.Contains(plan.stdout, "will be moved") || !strings.Contains(plan.stdout, "host: local → remote") {
		t.Fatalf("plan after a kill while streaming the image: %+v", plan)
	}
	t.Logf("plan after the kill:\n%s", plan.stdout)
	r := boxes(t, dir, "apply", "--auto-approve", "--confirm-delete", box)
	if r.code != 0 {
		t.Fatalf("apply after a kill while streaming the image: %+v", r)
	}
	if r := boxes(t, dir, "plan", "--detailed-exitcode"); r.code != 0 {
		t.Fatalf("plan after finishing the move: %+v", r)
	}
	if got := marker(t, dir, box); got != "survives-a-cut-stream" {
		t.Fatalf("marker: %q", got)
	}
	if local, onRemote := copies(t, remote, box); local != [2]int{} || onRemote != [2]int{3, 2} {
		t.Fatalf("copies after the move: local %v, remote %v", local, onRemote)
	}
	if _, err := remote.Client().ImageInspect(context.Background(), id); err != nil {
		t.Errorf("the remote lacks the image after the move: %v", err)
	}
}

// TestIntegrationMovePutBack changes host: back while a move is in
// progress: before the new copy is verified the original stays the box; after,
// the new copy (which may have run) is what comes back. Real engine: which
// copy's /data came back is read from the marker inside, after a real kill
// and a real copy on a second engine over ssh.
func TestIntegrationMovePutBack(t *testing.T) {
	image := startMove(t, moveBox)
	bin := buildBoxes(t)
	remote := testhost.Start(t, testhost.Options{SSH: true, Images: []string{image}})
	t.Setenv("PATH", remote.SSHPath+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir := t.TempDir()
	moveConfig(t, dir, remote, moveBox, "")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	if r := boxes(t, dir, "exec", moveBox, "--", "sh", "-c", "echo original > /data/home/agent/marker"); r.code != 0 {
		t.Fatalf("writing the marker: %+v", r)
	}
	onlyLocal := func(what string) {
		t.Helper()
		if local, onRemote := copies(t, remote, moveBox); local != [2]int{3, 2} || onRemote != [2]int{} {
			t.Fatalf("%s: local %v, remote %v", what, local, onRemote)
		}
		if r := boxes(t, dir, "plan", "--detailed-exitcode"); r.code != 0 {
			t.Fatalf("plan %s: %+v", what, r)
		}
	}

	// Cut short before the new copy is verified, then put back.
	moveConfig(t, dir, remote, moveBox, "remote")
	killApplyAt(t, bin, dir, "checking the restored data")
	moveConfig(t, dir, remote, moveBox, "")
	plan := boxes(t, dir, "plan", "--detailed-exitcode")
	if plan.code != 2 || !strings.Contains(plan.stdout, "was put back before its new copy was verified") {
		t.Fatalf("plan of a move put back: %+v", plan)
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply of a move put back: %+v", r)
	}
	onlyLocal("after a move put back before it was verified")
	if got := marker(t, dir, moveBox); got != "original" {
		t.Fatalf("marker: %q", got)
	}

	// Verified, used on the new host, then put back: the newer copy comes back.
	moveConfig(t, dir, remote, moveBox, "remote")
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply of the move: %+v", r)
	}
	if r := boxes(t, dir, "exec", moveBox, "--", "sh", "-c", "echo newer > /data/home/agent/marker"); r.code != 0 {
		t.Fatalf("writing the marker on the remote: %+v", r)
	}
	moveConfig(t, dir, remote, moveBox, "")
	plan = boxes(t, dir, "plan", "--detailed-exitcode")
	if plan.code != 2 || !strings.Contains(plan.stdout, "was put back after its new copy was verified") {
		t.Fatalf("plan of a verified move put back: %+v", plan)
	}
	if r := boxes(t, dir, "apply", "--auto-approve", "--confirm-delete", moveBox); r.code != 0 {
		t.Fatalf("apply of a verified move put back: %+v", r)
	}
	onlyLocal("after a verified move put back")
	if got := marker(t, dir, moveBox); got != "newer" {
		t.Fatalf("marker: %q", got)
	}
}
