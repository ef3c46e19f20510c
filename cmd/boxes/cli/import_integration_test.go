package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/workspace"
)

// hermesListing is what the box's ~/.hermes holds, read from inside the
// box as its agent: each entry's path, type, owner, mode, time, link
// target, and each regular file's content.
func hermesListing(t *testing.T, dir, box string) string {
	t.Helper()
	r := boxes(t, dir, "exec", box, "--", "sh", "-c",
		`cd .hermes && find . -printf '%p|%y|%U:%G|%m|%T@|%l\n' | sort && find . -type f | sort | xargs -I{} sh -c 'printf "%s: " {}; cat {}'`)
	if r.code != 0 {
		t.Fatalf("listing ~/.hermes: %+v", r)
	}
	return r.stdout
}

// import-hermes puts a tree of this machine into a box's ~/.hermes, owned
// by the box's agent with the files' modes and times; a box that holds
// state is replaced only once confirmed, and what it held is in the
// snapshot the import names. Real engine: the copy into the stopped
// container's volume keeps the owners the tar names, the helpers run the
// box's image and go, and the box runs again on the imported state.
func TestIntegrationImportHermes(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image := testImage(t, "BOXES_TEST_IMAGE", "hermes-box-lite:test")
	const box = "it-import"
	removeBoxes(box)
	t.Cleanup(func() { removeBoxes(box) })

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nboxes:\n  "+box+": {}\n")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	token := readFile(t, filepath.Join(dir, ".boxes", "secrets", box+".env"))
	uid := strings.TrimSpace(boxes(t, dir, "exec", box, "--", "id", "-u").stdout)
	gid := strings.TrimSpace(boxes(t, dir, "exec", box, "--", "id", "-g").stdout)
	if uid == "" || gid == "" {
		t.Fatal("no agent IDs in the box")
	}

	// A tree as Hermes leaves it: settings, a key in .env, a session, a
	// link, a private directory, an old time.
	state := filepath.Join(t.TempDir(), "hermes")
	key := "sk-" + "or-v1-" + strings.Repeat("4c9d", 12)
	for name, f := range map[string]struct {
		content string
		mode    os.FileMode
	}{
		"config.yaml":      {"model: anthropic/claude-sonnet\n", 0o644},
		".env":             {"OPENROUTER_API_KEY=" + key + "\n", 0o600},
		"sessions/s1.json": {`{"messages": []}` + "\n", 0o600},
	} {
		p := filepath.Join(state, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.content), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("sessions/s1.json", filepath.Join(state, "latest")); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(state, "config.yaml"), old, old); err != nil {
		t.Fatal(err)
	}

	// The box's ~/.hermes is hb init's empty directory: no confirmation,
	// no snapshot.
	r := boxes(t, dir, "import-hermes", box, state, "--json")
	if r.code != 0 {
		t.Fatalf("first import: %+v", r)
	}
	var res workspace.ImportResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("import --json: %v\n%s", err, r.stdout)
	}
	if res.Box != box || res.State != "running" || res.Tool != "hermes" || res.Path != "/data/home/agent/.hermes" || res.Files != 3 || res.Dirs != 1 || res.Links != 1 ||
		res.Snapshot != "" || res.Replaced.Replaced() || res.Replaced.Kind != "directory" || len(res.Credentials) != 3 || res.Credentials[0].Path != ".env" {
		t.Errorf("first import --json: %+v", res)
	}
	if strings.Contains(r.stdout+r.stderr, key) || strings.Contains(r.stdout+r.stderr, "4c9d") {
		t.Errorf("the import printed the key:\n%s\n%s", r.stdout, r.stderr)
	}
	owner := "|" + uid + ":" + gid + "|"
	first := hermesListing(t, dir, box)
	for _, want := range []string{
		".|d" + owner + "700|", "./.env|f" + owner + "600|", "./config.yaml|f" + owner + "644|1577934245.0000000000|",
		"./latest|l" + owner + "777|", "|sessions/s1.json\n", "./sessions|d" + owner + "750|", "./sessions/s1.json|f" + owner + "600|",
		"./.env: OPENROUTER_API_KEY=" + key + "\n", "./config.yaml: model: anthropic/claude-sonnet\n",
	} {
		if !strings.Contains(first, want) {
			t.Errorf("~/.hermes lacks %q:\n%s", want, first)
		}
	}
	if readFile(t, filepath.Join(dir, ".boxes", "secrets", box+".env")) != token {
		t.Error("the import changed the box's token")
	}

	// A tree with a link out of it is refused before the box is touched,
	// confirmed or not.
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.MkdirAll(bad, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(state, ".env"), filepath.Join(bad, ".env")); err != nil {
		t.Fatal(err)
	}
	if r := boxes(t, dir, "import-hermes", box, bad, "--confirm", box); r.code != 1 || r.stdout != "" ||
		r.stderr != "boxes: error: "+bad+"/.env is a link to "+state+"/.env, an absolute path: only relative links to something inside "+bad+" are imported; nothing was changed\n"+
			"boxes: hint: replace the link with a copy of what it points to, or remove it\n" {
		t.Errorf("import of a tree with a link out: %+v", r)
	}

	// Now the box holds state: without a terminal or --confirm, nothing
	// is replaced and no snapshot is made.
	if err := os.WriteFile(filepath.Join(state, "config.yaml"), []byte("model: openai/gpt-5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(state, ".env")); err != nil {
		t.Fatal(err)
	}
	r = boxes(t, dir, "import-hermes", box, state)
	if r.code != 1 || !strings.Contains(r.stdout, "box it-import's /data/home/agent/.hermes holds 5 entries (") ||
		!strings.Contains(r.stderr, "boxes: error: import replaces what box it-import holds at /data/home/agent/.hermes and there is no terminal to confirm it; nothing was changed\nboxes: hint: pass --confirm it-import\n") {
		t.Errorf("unconfirmed import: %+v", r)
	}
	if got := hermesListing(t, dir, box); got != first {
		t.Errorf("an unconfirmed import changed ~/.hermes:\n%s", got)
	}
	snapshots := func() string {
		return dockerOut(t, "volume", "ls", "-q", "--filter", "label="+compose.SnapshotLabel, "--filter", "label="+compose.BoxLabel+"="+box)
	}
	if got := snapshots(); got != "" {
		t.Errorf("an unconfirmed import made %s", got)
	}

	// Confirmed: replaced, what it held in the snapshot named, the box
	// running again with its token, no helper and no copy left.
	r = boxes(t, dir, "import-hermes", box, state, "--confirm", box)
	label := regexp.MustCompile(`what it replaced is in snapshot (before-import-hermes-\d{8}-\d{6}): boxes revert it-import `).FindStringSubmatch(r.stdout)
	if r.code != 0 || label == nil || !strings.Contains(r.stdout, "no credentials found in "+state+"\n") || !strings.Contains(r.stdout, "; it is running\n") {
		t.Fatalf("confirmed import: %+v", r)
	}
	second := hermesListing(t, dir, box)
	if !strings.Contains(second, "./config.yaml: model: openai/gpt-5\n") || strings.Contains(second, ".env") {
		t.Errorf("~/.hermes after the second import:\n%s", second)
	}
	vol := compose.SnapshotVolumeName(box, label[1])
	if got := snapshots(); got != vol {
		t.Errorf("snapshots %q, want %s", got, vol)
	}
	kept := dockerOut(t, "run", "--rm", "--network", "none", "-v", vol+":/v:ro", "--entrypoint", "sh", image, "-c",
		"cat /v/data/home/agent/.hermes/config.yaml /v/data/home/agent/.hermes/.env")
	if kept != "model: anthropic/claude-sonnet\nOPENROUTER_API_KEY="+key {
		t.Errorf("the snapshot holds %q", kept)
	}
	if st := dockerOut(t, "inspect", "-f", "{{.State.Status}}", compose.ContainerName(box, compose.AgentService)); st != "running" {
		t.Errorf("the box is %s after the import", st)
	}
	if readFile(t, filepath.Join(dir, ".boxes", "secrets", box+".env")) != token {
		t.Error("the import changed the box's token")
	}
	if ids := dockerOut(t, "ps", "-aq", "--filter", "label="+compose.OneOffLabel, "--filter", "label="+compose.BoxLabel+"="+box); ids != "" {
		t.Errorf("helper containers left: %s", ids)
	}
	if r := boxes(t, dir, "exec", box, "--", "sh", "-c", "ls -A | grep -c boxes- || true"); r.stdout != "0\n" {
		t.Errorf("copies left in the home: %+v", r)
	}
}
