package diff_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/reconcile"
)

// TestHostMoveShown: boxes diff shows a changed host: as the plan's move,
// from the old host to the new one, in every format.
func TestHostMoveShown(t *testing.T) {
	hosts := "hosts:\n  nexus: {docker: ssh://me@nexus}\n  edge: {docker: ssh://me@edge}\n"
	r := newRepo(t)
	r.commit("base", map[string]string{"boxes.yaml": "version: 1\nboxes:\n  roam: {host: nexus}\n" + hosts, "boxes.lock": lockText(oldImage)})
	r.write(map[string]string{"boxes.yaml": "version: 1\nboxes:\n  roam: {host: edge}\n" + hosts})
	res, err := r.against("", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.Boxes) != 1 || res.Plan.Boxes[0].Action != reconcile.Move || res.Plan.Boxes[0].Move.From != "nexus" || res.Plan.Boxes[0].Move.To != "edge" {
		t.Fatalf("plan: %+v", res.Plan.Boxes)
	}
	var text, md bytes.Buffer
	res.Plan.RenderText(&text, false)
	res.Plan.RenderMarkdown(&md)
	for _, out := range []string{text.String(), md.String()} {
		if !strings.Contains(out, "host: nexus → edge") || !strings.Contains(out, "1 to move") {
			t.Errorf("render:\n%s", out)
		}
	}
}
