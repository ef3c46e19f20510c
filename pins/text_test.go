package pins

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestLockUpdateText(t *testing.T) {
	u := LockUpdate{Changes: []Change{
		{Pin: "node", New: "22.1.0", Changed: false},
		{Pin: "claude", New: "1.2.0", From: "npm", Changed: true},
		{Pin: "codex", Old: "0.9.0", New: "1.0.0", From: "npm", Changed: true},
	}}
	var b strings.Builder
	u.WriteText(&b)
	want := "  node      22.1.0 (newest)\n+ claude    1.2.0 (npm)\n~ codex     0.9.0 -> 1.0.0 (npm)\n"
	if b.String() != want {
		t.Errorf("text:\n%q\nwant\n%q", b.String(), want)
	}
	// Nothing resolved is an empty list, not null, for tools reading it.
	if j, _ := json.Marshal(LockUpdate{Complete: true}.JSON()); string(j) != "[]" {
		t.Errorf("json of no changes: %s", j)
	}
}
