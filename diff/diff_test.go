package diff_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/diff"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

const (
	oldImage = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	newImage = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

func lockText(image string) string {
	text := `version: 1
pins:
  base:
    image: ubuntu:24.04
    digest: sha256:` + strings.Repeat("ab", 32) + `
`
	if image != "" {
		text += `image:
  id: ` + image + `
  ref: hermes-box-lite:test
  built: "2026-12-02T10:15:00Z"
`
	}
	return text
}

// repo is a temporary Git repository whose commits are reproducible, so
// golden files can show their hashes.
type repo struct {
	t   *testing.T
	dir string
}

func newRepo(t *testing.T) *repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	r := &repo{t: t, dir: t.TempDir()}
	r.git("init", "-q", "-b", "main")
	return r
}

func (r *repo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", r.dir}, args...)...)
	cmd.Env = append(os.Environ(),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.org", "GIT_AUTHOR_DATE=2026-12-02T10:00:00Z",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.org", "GIT_COMMITTER_DATE=2026-12-02T10:00:00Z",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func (r *repo) write(files map[string]string) {
	r.t.Helper()
	for name, content := range files {
		path := filepath.Join(r.dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if content == "" {
			_ = os.Remove(path)
			continue
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
}

func (r *repo) commit(msg string, files map[string]string) {
	r.t.Helper()
	r.write(files)
	r.git("add", "-A")
	r.git("commit", "-q", "--allow-empty", "-m", msg)
}

// against diffs the working tree's sub/boxes.yaml (sub may be "") against ref.
func (r *repo) against(sub, ref string) (*diff.Result, error) {
	r.t.Helper()
	path := filepath.Join(r.dir, sub, "boxes.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		r.t.Fatal(err)
	}
	cfg, err := spec.Parse("boxes.yaml", data)
	if err != nil {
		r.t.Fatal(err)
	}
	cfg.Path = path
	var lock *spec.Lock
	if data, err := os.ReadFile(filepath.Join(r.dir, sub, "boxes.lock")); err == nil {
		if lock, err = spec.ParseLock("boxes.lock", data); err != nil {
			r.t.Fatal(err)
		}
	}
	return diff.Against(context.Background(), cfg, lock, ref)
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./diff/ -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s:\n--- got ---\n%s\n--- want ---\n%s", name, path, got, want)
	}
}

func actions(p *reconcile.Plan) map[string]reconcile.Action {
	out := map[string]reconcile.Action{}
	for _, b := range p.Boxes {
		out[b.Name] = b.Action
	}
	return out
}

func reasons(p *reconcile.Plan, name string) []string {
	var out []string
	for _, b := range p.Boxes {
		if b.Name == name {
			for _, r := range b.Reasons {
				out = append(out, r.String())
			}
		}
	}
	return out
}

const baseYAML = `version: 1
defaults:
  memory: 4GiB
  executor: {bind: 127.0.0.1, port: auto}
boxes:
  same: {}
  bigger: {}
  sleepy: {state: stopped}
  awake: {}
  fixed: {executor: {port: 4801}}
  old: {}
`

const changedYAML = `version: 1
defaults:
  memory: 4GiB
  executor: {bind: 127.0.0.1, port: auto}
boxes:
  same: {}
  bigger: {memory: 8GiB, env: {TZ: Europe/Berlin}}
  sleepy: {}
  awake: {state: stopped}
  fixed: {executor: {port: 4802}}
  fresh: {}
`

// TestChanges is every action a diff can show, in the three formats.
func TestChanges(t *testing.T) {
	r := newRepo(t)
	r.commit("base", map[string]string{"boxes.yaml": baseYAML, "boxes.lock": lockText(oldImage)})
	r.write(map[string]string{"boxes.yaml": changedYAML})
	res, err := r.against("", "main")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]reconcile.Action{
		"same": reconcile.NoOp, "bigger": reconcile.Recreate, "sleepy": reconcile.Start,
		"awake": reconcile.Stop, "fixed": reconcile.Recreate, "fresh": reconcile.Create, "old": reconcile.Delete,
	}
	if got := actions(res.Plan); !equalActions(got, want) {
		t.Fatalf("actions = %v, want %v", got, want)
	}
	if got := strings.Join(reasons(res.Plan, "bigger"), "; "); got != "env.TZ: (none) → Europe/Berlin; memory: 4GiB → 8GiB" {
		t.Errorf("bigger's reasons = %q", got)
	}
	if got := strings.Join(reasons(res.Plan, "fixed"), "; "); got != "executor.port: 4801 → 4802" {
		t.Errorf("fixed's reasons = %q", got)
	}
	var text, md, js bytes.Buffer
	res.RenderText(&text, false)
	res.RenderMarkdown(&md)
	enc := json.NewEncoder(&js)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res.JSON()); err != nil {
		t.Fatal(err)
	}
	golden(t, "changes.txt", text.Bytes())
	golden(t, "changes.md", md.Bytes())
	golden(t, "changes.json", js.Bytes())
}

func equalActions(a, b map[string]reconcile.Action) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestImageChange: a new image in boxes.lock recreates every box, naming both images.
func TestImageChange(t *testing.T) {
	r := newRepo(t)
	r.commit("base", map[string]string{"boxes.yaml": baseYAML, "boxes.lock": lockText(oldImage)})
	r.write(map[string]string{"boxes.lock": lockText(newImage)})
	res, err := r.against("", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range res.Plan.Boxes {
		want := reconcile.Recreate
		if b.Name == "old" {
			continue
		}
		if b.Action != want {
			t.Errorf("%s: %s, want %s", b.Name, b.Action, want)
		}
		if got := strings.Join(reasons(res.Plan, b.Name), "; "); got != "image: 111111111111 → 222222222222" {
			t.Errorf("%s: reasons %q", b.Name, got)
		}
	}
}

// TestNoChanges: the working tree equal to REF is no change, and a commit that
// only touched other files is none either.
func TestNoChanges(t *testing.T) {
	r := newRepo(t)
	r.commit("base", map[string]string{"boxes.yaml": baseYAML, "boxes.lock": lockText(oldImage)})
	r.commit("docs", map[string]string{"README.md": "hello\n"})
	res, err := r.against("", "HEAD~1")
	if err != nil {
		t.Fatal(err)
	}
	if res.Plan.Changes() {
		var buf bytes.Buffer
		res.RenderText(&buf, false)
		t.Fatalf("changes against an identical revision:\n%s", buf.String())
	}
	var md bytes.Buffer
	res.RenderMarkdown(&md)
	golden(t, "nochanges.md", md.Bytes())
}

// TestNewFleet: boxes.yaml missing at REF is a new fleet: every box is created.
func TestNewFleet(t *testing.T) {
	r := newRepo(t)
	r.commit("empty", map[string]string{"README.md": "hello\n"})
	r.write(map[string]string{"boxes.yaml": changedYAML, "boxes.lock": lockText(newImage)})
	res, err := r.against("", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	s := res.Plan.Summary()
	if s != (reconcile.Summary{Create: 6}) {
		t.Errorf("summary = %+v, want 6 creates", s)
	}
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "does not exist at HEAD") {
		t.Errorf("notes = %q", res.Notes)
	}
	var text bytes.Buffer
	res.RenderText(&text, false)
	if !strings.Contains(text.String(), "Note: boxes.yaml does not exist at HEAD: a new fleet, every box is created.") {
		t.Errorf("text does not say the fleet is new:\n%s", text.String())
	}
}

// TestLockWithoutImageAtRef: REF's boxes could not have been applied, so they are new.
func TestLockWithoutImageAtRef(t *testing.T) {
	r := newRepo(t)
	r.commit("base", map[string]string{"boxes.yaml": baseYAML, "boxes.lock": lockText("")})
	r.write(map[string]string{"boxes.lock": lockText(newImage)})
	res, err := r.against("", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Plan.Summary(); s != (reconcile.Summary{Create: 6}) {
		t.Errorf("summary = %+v, want 6 creates", s)
	}
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "has no image") {
		t.Errorf("notes = %q", res.Notes)
	}
}

// TestSubdirectory: boxes.yaml below the top of the repository is read at the
// same place at REF, and errors in REF's file name the revision and the path.
func TestSubdirectory(t *testing.T) {
	r := newRepo(t)
	r.commit("base", map[string]string{"fleet/boxes.yaml": baseYAML, "fleet/boxes.lock": lockText(oldImage)})
	r.write(map[string]string{"fleet/boxes.yaml": strings.Replace(baseYAML, "  old: {}\n", "", 1)})
	res, err := r.against("fleet", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Plan.Deletes(); len(got) != 1 || got[0] != "old" {
		t.Errorf("deletes = %v, want [old]", got)
	}
	if s := res.Plan.Summary(); s.Delete != 1 || s.NoOp != 5 {
		t.Errorf("summary = %+v", s)
	}

	r.commit("broken", map[string]string{"fleet/boxes.yaml": baseYAML + "  bad_name!: {}\n"})
	r.write(map[string]string{"fleet/boxes.yaml": baseYAML})
	_, err = r.against("fleet", "HEAD")
	if err == nil || !strings.Contains(err.Error(), "HEAD:fleet/boxes.yaml:") {
		t.Errorf("error for a broken boxes.yaml at HEAD = %v, want one naming HEAD:fleet/boxes.yaml:LINE", err)
	}
}

func TestBadRef(t *testing.T) {
	r := newRepo(t)
	r.commit("base", map[string]string{"boxes.yaml": baseYAML, "boxes.lock": lockText(oldImage)})
	for _, ref := range []string{"no-such-branch", "HEAD~5", "--output=x", "0123456789abcdef0123456789abcdef01234567"} {
		_, err := r.against("", ref)
		if !errors.Is(err, diff.ErrBadRef) {
			t.Errorf("%s: err = %v, want ErrBadRef", ref, err)
		}
	}
}

func TestNotARepository(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "boxes.yaml")
	cfg, err := spec.Parse("boxes.yaml", []byte(baseYAML))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Path = path
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(dir))
	_, err = diff.Against(context.Background(), cfg, nil, "HEAD")
	if err == nil || !strings.Contains(err.Error(), "is not in a Git repository") {
		t.Errorf("err = %v, want one saying it is not in a Git repository", err)
	}
}

// TestHostMove: a box whose host: changed is never shown as a plain create or
// delete: plan either names the move or refuses it, naming both hosts.
func TestHostMove(t *testing.T) {
	hosts := "hosts:\n  nexus: {docker: ssh://me@nexus}\n  edge: {docker: ssh://me@edge}\n"
	r := newRepo(t)
	r.commit("base", map[string]string{"boxes.yaml": "version: 1\nboxes:\n  roam: {host: nexus}\n" + hosts, "boxes.lock": lockText(oldImage)})
	r.write(map[string]string{"boxes.yaml": "version: 1\nboxes:\n  roam: {host: edge}\n" + hosts})
	res, err := r.against("", "HEAD")
	if err != nil {
		if !strings.Contains(err.Error(), "roam") || !strings.Contains(err.Error(), "nexus") || !strings.Contains(err.Error(), "edge") {
			t.Fatalf("err = %v, want one naming roam, nexus and edge", err)
		}
		return
	}
	for _, b := range res.Plan.Boxes {
		if b.Action == reconcile.Create || b.Action == reconcile.Delete {
			t.Errorf("move shown as %s of %s on %q", b.Action, b.Name, b.Host)
		}
	}
}

// TestDoorChange: a change of the rules between REF and the working tree is
// a recreate of the gate alone, named by what was added and removed; the
// diff needs no credential's value to say so.
func TestDoorChange(t *testing.T) {
	r := newRepo(t)
	r.commit("base", map[string]string{"boxes.yaml": `version: 1
boxes:
  open: {}
  listed: {egress: [a.example, c.example]}
  lan: {}
  same: {egress: none}
`, "boxes.lock": lockText(oldImage)})
	r.write(map[string]string{"boxes.yaml": `version: 1
boxes:
  open: {egress: [a.example, b.example]}
  listed: {egress: [c.example, b.example]}
  lan: {private: ["192.168.1.10:5432"]}
  same: {egress: none}
`})
	res, err := r.against("", "main")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"open":   "egress: open → 2 destinations (+ a.example, + b.example)",
		"listed": "egress: 2 destinations → 2 destinations (+ b.example, − a.example)",
		"lan":    "private: none → 1 exception (+ 192.168.1.10:5432)",
	}
	for _, b := range res.Plan.Boxes {
		if b.Name == "same" {
			if b.Action != reconcile.NoOp {
				t.Errorf("same: %s %v, want no change", b.Action, reasons(res.Plan, b.Name))
			}
			continue
		}
		if b.Action != reconcile.Recreate || !b.GateOnly {
			t.Errorf("%s: %s, gate only %v, want a recreate of the gate alone", b.Name, b.Action, b.GateOnly)
		}
		if got := strings.Join(reasons(res.Plan, b.Name), "; "); got != want[b.Name] {
			t.Errorf("%s: reasons %q, want %q", b.Name, got, want[b.Name])
		}
	}
	var text bytes.Buffer
	res.RenderText(&text, false)
	if !strings.Contains(text.String(), "# open's gate must be replaced: the agent keeps running") {
		t.Errorf("the text does not say the agent keeps running:\n%s", text.String())
	}
}
