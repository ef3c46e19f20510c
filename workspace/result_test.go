package workspace_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/workspace"
)

// A result's text is the sentence saying what the command did; its JSON is
// format_version 1 without that sentence.
func TestBoxResultText(t *testing.T) {
	r := engine.Resources{Containers: []engine.Container{{}, {}}, Networks: []engine.Network{{}}}
	removed := workspace.Removed("alpha", "nexus", r, "", true)
	for _, c := range []struct {
		res  workspace.BoxResult
		want string
	}{
		{workspace.Changed("alpha", "", "stopped"), "stopped alpha\n"},
		{workspace.Changed("alpha", "", "running"), "started alpha\n"},
		{removed, "removed alpha\n"},
	} {
		var b strings.Builder
		c.res.WriteText(&b)
		if b.String() != c.want {
			t.Errorf("%+v: %q, want %q", c.res, b.String(), c.want)
		}
		if j, _ := json.Marshal(c.res); !strings.HasPrefix(string(j), `{"format_version":1,"box":"alpha"`) || strings.Contains(string(j), strings.TrimSpace(c.want)) {
			t.Errorf("json: %s", j)
		}
	}
	var b strings.Builder
	removed.WriteDeleting(&b)
	if want := "box alpha: 2 containers, 1 network, 0 volumes; backup: no backup found\n"; b.String() != want {
		t.Errorf("before rm: %q, want %q", b.String(), want)
	}
}
