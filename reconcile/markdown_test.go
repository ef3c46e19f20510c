package reconcile_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/reconcile"
)

// TestMarkdownView: the summary and every delete come before the fold, and
// each changed box's reasons are in the table outside it.
func TestMarkdownView(t *testing.T) {
	var changes, none bytes.Buffer
	changesPlan(t).RenderMarkdownView(&changes, reconcile.MarkdownView{Title: "boxes plan"})
	noChangePlan(t).RenderMarkdownView(&none, reconcile.MarkdownView{Title: "boxes plan", Notes: []string{"a note"}})
	golden(t, "changes.view.md", changes.Bytes())
	golden(t, "nochanges.view.md", none.Bytes())

	out := changes.String()
	fold := strings.Index(out, "<details>")
	for _, want := range []string{
		"**boxes plan: Plan: 1 to create, 1 to recreate, 1 to start, 0 to stop, 1 to delete.**",
		"> [!CAUTION]\n> **Box `old` is deleted with its data.**",
		"`hbl-old_agent-data` (1.5 GiB)",
		"image: 222222222222 → 111111111111",
		"state: stopped → running",
	} {
		if i := strings.Index(out, want); i < 0 || i > fold {
			t.Errorf("%q is not before the fold:\n%s", want, out)
		}
	}
	// Inside the diff fence only deletes start with "-", which the code host paints red.
	for _, line := range strings.Split(out[fold:], "\n") {
		if strings.HasPrefix(line, "-") && !strings.HasPrefix(line, "- delete old") && !strings.HasPrefix(line, "-     ") {
			t.Errorf("line %q is red in the fence but deletes nothing", line)
		}
	}
}
