package cli

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
)

// TestIntegrationDiffMatchesPlan: on a fleet applied from a commit, boxes diff
// against that commit (no engine) names the same action and reasons for
// every box as boxes plan (the engine) does. Real engine: the plan side
// reads the config hashes and states compose left on real containers, not
// the fake's model of them.
func TestIntegrationDiffMatchesPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image := testImage(t, "BOXES_TEST_IMAGE", "hermes-box-lite:test")
	names := []string{"it-diff-a", "it-diff-b", "it-diff-c", "it-diff-d"}
	removeBoxes(names...)
	t.Cleanup(func() { removeBoxes(names...) })

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), `version: 1
defaults: {memory: 1GiB, executor: {port: auto}}
boxes:
  it-diff-a: {}
  it-diff-b: {state: stopped}
  it-diff-c: {}
  it-diff-d: {env: {TZ: UTC}}
`)
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	gitIn(t, dir, "init", "-q", "-b", "main")
	gitIn(t, dir, "add", "boxes.yaml", "boxes.lock")
	gitIn(t, dir, "commit", "-q", "-m", "base")
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	writeFile(t, filepath.Join(dir, "boxes.yaml"), `version: 1
defaults: {memory: 1GiB, executor: {port: auto}}
boxes:
  it-diff-a: {memory: 2GiB, cpus: 1}
  it-diff-b: {}
  it-diff-d: {env: {TZ: Europe/Berlin}, state: stopped}
  it-diff-e: {}
`)
	type box struct {
		Name    string   `json:"name"`
		Action  string   `json:"action"`
		Reasons []string `json:"reasons"`
	}
	decode := func(what string, r run) []box {
		t.Helper()
		if r.code != 2 {
			t.Fatalf("%s: exit %d, want 2: %s", what, r.code, r.stderr)
		}
		var p struct {
			Boxes []box `json:"boxes"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return p.Boxes
	}
	plan := decode("plan", boxes(t, dir, "plan", "--json", "--detailed-exitcode"))
	diff := decode("diff", boxes(t, dir, "diff", "--json", "main"))
	if !reflect.DeepEqual(plan, diff) {
		t.Errorf("diff and plan differ:\nplan: %+v\ndiff: %+v", plan, diff)
	}
	if len(plan) != 5 {
		t.Errorf("plan has %d boxes, want 5: %+v", len(plan), plan)
	}
}
