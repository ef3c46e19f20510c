package cli

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/workspace"
)

// workListing is what a box's work directory holds, on volume vol under
// dir: each entry's path, type, owner, mode, modification time, link count,
// and size and link target but for directories (whose size is the file
// system's business), then each regular file's sha256; read by a
// throwaway container of image that mounts the volume read-only.
func workListing(t *testing.T, image, vol, dir string) string {
	t.Helper()
	return dockerOut(t, "run", "--rm", "--network", "none", "-v", vol+":/v:ro", "--entrypoint", "sh", image, "-c",
		"cd /v/"+dir+"/home/agent && { find work -type d -printf '%p|%y|%U:%G|%m|%T@|%n\\n'; find work ! -type d -printf '%p|%y|%U:%G|%m|%T@|%n|%s|%l\\n'; } | sort && find work -type f -exec sha256sum {} + | sort")
}

// A snapshot copies a box's /data on its engine, byte for byte with owners,
// modes, times and links, quiescing a running box and resuming it; a
// revert puts it back under a stopped box and starts the box again with
// its token; rm leaves the snapshots, snapshot rm deletes them. Real
// engine: what cp -a keeps of a volume, and that the helpers go.
func TestIntegrationSnapshot(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image := testImage(t, "BOXES_TEST_IMAGE", "hermes-box-lite:test")
	const box = "it-snap"
	removeBoxes(box)
	t.Cleanup(func() { removeBoxes(box) })
	agent := compose.ContainerName(box, compose.AgentService)
	vol := compose.VolumeName(box, compose.AgentVolume)

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nboxes:\n  "+box+": {}\n")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	// A file only its owner reads, a symlink, a hard link, a file with an
	// old time, a directory of mode 0700, a file root owns, random bytes.
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
	dockerOut(t, "exec", "-u", "0", agent, "sh", "-c", "printf root > /data/home/agent/work/rootfile && chmod 640 /data/home/agent/work/rootfile")
	before := workListing(t, image, vol, ".")
	for _, want := range []string{"work/secret|f|1000:1000|600|", "work/link|l|1000:1000|777|", "|notes.txt\n", "work/rootfile|f|0:0|640|", "work/private|d|1000:1000|700|", "|2|6|\n"} {
		if !strings.Contains(before+"\n", want) {
			t.Fatalf("the files are not as written (%q):\n%s", want, before)
		}
	}
	token := readFile(t, filepath.Join(dir, ".boxes", "secrets", box+".env"))

	// A snapshot of the running box: labelled, a whole copy, the box resumed,
	// no helper left.
	r := boxes(t, dir, "snapshot", box, "before", "--json")
	if r.code != 0 {
		t.Fatalf("snapshot: %+v", r)
	}
	var row workspace.SnapshotRow
	if err := json.Unmarshal([]byte(r.stdout), &row); err != nil || row.Box != box || row.Label != "before" || row.SizeBytes <= 300000 ||
		row.Volume != compose.SnapshotVolumeName(box, "before") || time.Since(row.Created) > time.Minute {
		t.Fatalf("snapshot --json: %v %+v", err, row)
	}
	thawed(t, box, "after the snapshot")
	var labels map[string]string
	if err := json.Unmarshal([]byte(dockerOut(t, "volume", "inspect", "-f", "{{json .Labels}}", row.Volume)), &labels); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{compose.ManagedLabel: "1", compose.BoxLabel: box, compose.FleetLabel: fleetName("it"), compose.SnapshotLabel: "before"} {
		if labels[k] != v {
			t.Errorf("label %s=%q, want %q (%v)", k, labels[k], v, labels)
		}
	}
	if created, err := time.Parse(time.RFC3339, labels[compose.SnapshotCreatedLabel]); err != nil || !created.Equal(row.Created) {
		t.Errorf("created label %q: %v", labels[compose.SnapshotCreatedLabel], err)
	}
	if ids := dockerOut(t, "ps", "-aq", "--filter", "label="+compose.OneOffLabel, "--filter", "label="+compose.BoxLabel+"="+box); ids != "" {
		t.Errorf("helper containers left: %s", ids)
	}
	if got := workListing(t, image, row.Volume, "data"); got != before {
		t.Errorf("the snapshot differs from /data:\n%s\nwant:\n%s", got, before)
	}
	if out := dockerOut(t, "run", "--rm", "-v", row.Volume+":/v:ro", "--entrypoint", "sh", image, "-c", "ls -A /v; test ! -e /v/data/.hb/quiesced && echo unmarked"); out != "data\nunmarked" {
		t.Errorf("the snapshot volume holds %q", out)
	}

	// Refused: a label the box has; a revert without a terminal or --confirm.
	if r := boxes(t, dir, "snapshot", box, "before"); r.code != 1 || !strings.Contains(r.stderr, "box it-snap already has a snapshot before on the local engine; nothing was changed") {
		t.Errorf("second snapshot before: %+v", r)
	}
	r = boxes(t, dir, "snapshot", box)
	if r.code != 0 || !regexp.MustCompile(`^snapshot \d{8}-\d{6} of it-snap made on the local engine: `).MatchString(r.stdout) {
		t.Errorf("snapshot with the default label: %+v", r)
	}

	// /data changes; the revert puts the snapshot back, byte for byte.
	if r := boxes(t, dir, "exec", box, "--", "sh", "-c", "printf changed > work/notes.txt && rm work/secret && ln -sf secret work/link && printf new > work/new && chmod 755 work/private"); r.code != 0 {
		t.Fatalf("changing /data: %+v", r)
	}
	if r := boxes(t, dir, "revert", box, "before"); r.code != 1 || !strings.Contains(r.stderr, "no terminal to confirm it; nothing was changed") {
		t.Errorf("revert without --confirm: %+v", r)
	}
	if workListing(t, image, vol, ".") == before {
		t.Fatal("an unconfirmed revert changed /data")
	}
	r = boxes(t, dir, "revert", box, "before", "--confirm", box)
	if r.code != 0 || !strings.Contains(r.stdout, "box it-snap's /data is replaced by snapshot before of ") || !strings.HasSuffix(r.stdout, "reverted it-snap to snapshot before; it is running\n") {
		t.Fatalf("revert: %+v", r)
	}
	if got := workListing(t, image, vol, "."); got != before {
		t.Errorf("/data after the revert:\n%s\nwant:\n%s", got, before)
	}
	thawed(t, box, "after the revert")
	if readFile(t, filepath.Join(dir, ".boxes", "secrets", box+".env")) != token {
		t.Error("the revert changed the box's token")
	}
	if r := boxes(t, dir, "exec", box, "--", "cat", "work/notes.txt"); r.stdout != "first\n" {
		t.Errorf("the reverted box reads %+v", r)
	}

	// A stopped box: snapshotted as it is, reverted and left stopped.
	if r := boxes(t, dir, "stop", box); r.code != 0 {
		t.Fatalf("stop: %+v", r)
	}
	if r := boxes(t, dir, "snapshot", box, "off"); r.code != 0 {
		t.Fatalf("snapshot of the stopped box: %+v", r)
	}
	if got := workListing(t, image, compose.SnapshotVolumeName(box, "off"), "data"); got != before {
		t.Errorf("the stopped box's snapshot:\n%s\nwant:\n%s", got, before)
	}
	r = boxes(t, dir, "revert", box, "off", "--confirm", box)
	if r.code != 0 || !strings.HasSuffix(r.stdout, "reverted it-snap to snapshot off; it is stopped\n") {
		t.Errorf("revert of the stopped box: %+v", r)
	}
	if st := dockerOut(t, "inspect", "-f", "{{.State.Status}}", agent); st != "exited" {
		t.Errorf("the stopped box is %s after its revert", st)
	}
	if got := workListing(t, image, vol, "."); got != before {
		t.Errorf("/data after the stopped box's revert:\n%s\nwant:\n%s", got, before)
	}

	// snapshots lists them; snapshot rm deletes one; rm leaves the others.
	r = boxes(t, dir, "snapshots", box, "--json")
	var rows workspace.SnapshotRows
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 3 {
		t.Fatalf("snapshots: %v %+v", err, r)
	}
	if r := boxes(t, dir, "snapshot", "rm", box, "off", "--confirm", box); r.code != 0 || !strings.Contains(r.stdout, "removed snapshot off of it-snap") {
		t.Errorf("snapshot rm: %+v", r)
	}
	if out := dockerOut(t, "volume", "ls", "-q", "--filter", "name="+compose.SnapshotVolumeName(box, "off")); out != "" {
		t.Errorf("snapshot rm left %s", out)
	}
	r = boxes(t, dir, "rm", box, "--confirm", box)
	if r.code != 0 || !strings.Contains(r.stdout, "box it-snap's 2 snapshots are kept: ") {
		t.Errorf("rm: %+v", r)
	}
	if out := dockerOut(t, "volume", "ls", "-q", "--filter", "label="+compose.SnapshotLabel, "--filter", "label="+compose.BoxLabel+"="+box); len(strings.Fields(out)) != 2 {
		t.Errorf("after rm, the snapshot volumes are %q", out)
	}
	if r := boxes(t, dir, "snapshot", "rm", box, "before", "--confirm", box); r.code != 0 {
		t.Errorf("snapshot rm of a removed box's snapshot: %+v", r)
	}
}
