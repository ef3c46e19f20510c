package cli

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/reconcile"
)

func TestConfirmMoves(t *testing.T) {
	p := &reconcile.Plan{Boxes: []reconcile.BoxPlan{
		{Name: "alpha", Action: reconcile.Move, Move: &reconcile.Moving{From: "", To: "nexus"}},
		{Name: "beta", Action: reconcile.Move, Move: &reconcile.Moving{From: "nexus", To: ""}},
		{Name: "gamma", Action: reconcile.Create},
	}}
	var out bytes.Buffer
	// No terminal: only --confirm-delete deletes an old copy.
	env := &Env{Streams: Streams{Out: &out}}
	got := confirmMoves(env, bufio.NewReader(strings.NewReader("")), p, []string{"beta"})
	if !got["beta"] || got["alpha"] || len(got) != 1 {
		t.Errorf("without a terminal: %v", got)
	}
	// On a terminal: the typed name deletes, Enter keeps.
	env.IsTTY = true
	got = confirmMoves(env, bufio.NewReader(strings.NewReader("alpha\n\n")), p, nil)
	if !got["alpha"] || got["beta"] {
		t.Errorf("typed: %v", got)
	}
	if !strings.Contains(out.String(), "Box alpha moves from local to nexus") || !strings.Contains(out.String(), "press Enter to keep it (stopped)") {
		t.Errorf("prompt:\n%s", out.String())
	}
}
