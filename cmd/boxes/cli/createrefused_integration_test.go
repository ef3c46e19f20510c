package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/reconcile"
)

// TestIntegrationCreateRefused: a create whose containers the engine
// refuses (a runtime it does not have: a setting validate cannot check
// offline) leaves nothing behind. Compose makes the network and volumes
// before the engine refuses the containers; apply removes them, with the
// token, says so, and the next plan is a plain create. What only a real
// engine shows: compose's order, and that what it made carries the labels
// the undo finds it by.
func TestIntegrationCreateRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image := testImage(t, "BOXES_TEST_IMAGE", "hermes-box-lite:test")
	const box = "it-crf"
	removeWithOneOffs(box)
	t.Cleanup(func() { removeWithOneOffs(box) })
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nfleet: it-crf\nboxes:\n  "+box+": {runtime: no-such-runtime}\n")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	r := boxes(t, dir, "apply", "--auto-approve")
	if r.code == 0 {
		t.Fatalf("apply with a runtime the engine lacks: %+v", r)
	}
	t.Logf("apply:\n%s", r.stderr)
	for _, want := range []string{"no-such-runtime", "what the create made was removed (0 containers, 1 network, 2 volumes), nothing else was touched"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("apply's error lacks %q:\n%s", want, r.stderr)
		}
	}
	if c, v, n := labelled(t, box); c+v+n != 0 {
		t.Errorf("%s keeps %d containers, %d volumes, %d networks", box, c, v, n)
	}
	if _, ok, _ := reconcile.TokensBeside(filepath.Join(dir, "boxes.yaml")).Get(box); ok {
		t.Error("the token is left")
	}
	if p := boxes(t, dir, "plan"); p.code != 0 || !strings.Contains(p.stdout, "1 to create") || !strings.Contains(p.stdout, "box is declared and has no resources") {
		t.Errorf("plan after the refused create: %+v", p)
	}
}
