package reconcile_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/statedir"
)

// moveInput declares box on host "far" with it observed (running) on the
// local engine, plus whatever the far host holds.
func moveInput(t *testing.T, farHasImage bool, oldState string) (reconcile.Input, spec.Box) {
	t.Helper()
	b := testBox("alpha")
	local := emptyObserved()
	observeBox(t, local, b, testImage, engine.State(oldState), 0)
	remote := &engine.Observed{Images: map[string]bool{testImage: farHasImage}}
	moved := b
	moved.Host = "far"
	cfg := testCfg(moved)
	return reconcile.Input{Config: cfg, Image: testImage, Tokens: map[string]string{"alpha": testToken},
		Observed: map[string]*engine.Observed{"": local, "far": remote}}, moved
}

func TestPlanMoveStages(t *testing.T) {
	rec := statedir.MoveRecord{Box: "alpha", From: "", To: "far", Archive: "backups/alpha-20261202-101500.tar.zst.age", Key: ".boxes/secrets/alpha-20261202-101500.move-key", Bytes: 5 << 20}
	saved, verified := rec, rec
	saved.Saved = true
	verified.Saved, verified.Verified = true, true
	for _, c := range []struct {
		name        string
		farImage    bool
		oldState    string
		farHasCopy  bool
		record      *statedir.MoveRecord
		stage       reconcile.MoveStage
		unverified  bool
		imageFrom   bool
		text        string
		jsonActions string
	}{
		{name: "new move", farImage: true, stage: reconcile.MoveSave, text: "stop the box on local, save /data"},
		{name: "new move, image streamed", stage: reconcile.MoveSave, imageFrom: true, text: "image 111111111111 streamed from local to far"},
		{name: "save cut short", farImage: true, record: &rec, stage: reconcile.MoveSave, text: "the save was cut short"},
		{name: "saved, old copy started again", farImage: true, record: &saved, stage: reconcile.MoveSave, text: "stop the box on local, save /data"},
		{name: "saved, nothing on the new host", farImage: true, oldState: "exited", record: &saved, stage: reconcile.MoveRestore, text: "the archive is saved"},
		{name: "unverified copy", farImage: true, oldState: "exited", farHasCopy: true, record: &saved, stage: reconcile.MoveRestore, unverified: true, text: "remove the unverified copy on far"},
		{name: "verified copy", farImage: true, oldState: "exited", farHasCopy: true, record: &verified, stage: reconcile.MoveDeleteOld, text: "delete the old copy on local"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.oldState == "" {
				c.oldState = "running"
			}
			in, b := moveInput(t, c.farImage, c.oldState)
			if c.farHasCopy {
				observeBox(t, in.Observed["far"], b, testImage, "running", 0)
			}
			if c.record != nil {
				in.Moves = map[string]statedir.MoveRecord{"alpha": *c.record}
			}
			p, err := reconcile.NewPlan(in)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Boxes) != 1 || p.Boxes[0].Action != reconcile.Move || p.Boxes[0].Move == nil {
				t.Fatalf("plan: %+v", p.Boxes)
			}
			m := p.Boxes[0].Move
			if m.From != "" || m.To != "far" || m.Stage != c.stage || (m.Unverified != nil) != c.unverified {
				t.Errorf("move: %+v", m)
			}
			if streamed := len(p.Images) == 1 && *p.Images[0].From == "" && p.Images[0].To == "far"; streamed != c.imageFrom || len(p.Images) > 1 {
				t.Errorf("image transfers: %+v", p.Images)
			}
			// The old copy to delete is the whole box: its three containers,
			// its two networks and its two volumes.
			if m.Old == nil || len(m.Old.Containers) != len(compose.Services) || len(m.Old.Networks) != 2 || len(m.Old.Volumes) != 2 {
				t.Errorf("old copy: %+v", m.Old)
			} else {
				for i, svc := range compose.Services {
					if m.Old.Containers[i].Name != compose.ContainerName("alpha", svc) {
						t.Errorf("old copy's container %d: %s, want %s", i, m.Old.Containers[i].Name, compose.ContainerName("alpha", svc))
					}
				}
				if m.Old.Networks[0].Name != compose.NetworkName("alpha") || m.Old.Networks[1].Name != compose.InsideNetworkName("alpha") {
					t.Errorf("old copy's networks: %+v", m.Old.Networks)
				}
			}
			if s := p.Summary(); s.Move != 1 || !p.Changes() {
				t.Errorf("summary: %+v", s)
			}
			var text bytes.Buffer
			p.RenderText(&text, false)
			for _, want := range []string{"# alpha will be moved from local to far", "host: local → far", c.text, "1 to move"} {
				if !strings.Contains(text.String(), want) {
					t.Errorf("text lacks %q:\n%s", want, text.String())
				}
			}
			var md bytes.Buffer
			p.RenderMarkdown(&md)
			if !strings.Contains(md.String(), "> move alpha") || !strings.Contains(md.String(), c.text) {
				t.Errorf("markdown:\n%s", md.String())
			}
			j := p.JSON()
			if j.Boxes[0].Move == nil || j.Boxes[0].Action != "move" || !contains(j.Boxes[0].Actions, "delete") {
				t.Errorf("json: %+v", j.Boxes[0])
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestPlanMoveErrors(t *testing.T) {
	// A copy on both hosts with no record of a move: nobody can tell which to keep.
	in, b := moveInput(t, true, "running")
	observeBox(t, in.Observed["far"], b, testImage, "running", 0)
	if _, err := reconcile.NewPlan(in); !errors.Is(err, reconcile.ErrTwoCopies) {
		t.Errorf("two copies without a record: %v", err)
	}
	// A record of another move does not count.
	in.Moves = map[string]statedir.MoveRecord{"alpha": {Box: "alpha", From: "far", To: "elsewhere", Saved: true, Verified: true}}
	if _, err := reconcile.NewPlan(in); !errors.Is(err, reconcile.ErrTwoCopies) {
		t.Errorf("two copies with another move's record: %v", err)
	}
	// No host has the image to stream.
	in, _ = moveInput(t, false, "running")
	in.Observed[""].Images = map[string]bool{}
	if _, err := reconcile.NewPlan(in); !errors.Is(err, reconcile.ErrImageMissing) {
		t.Errorf("no image anywhere: %v", err)
	}
}

func TestPlanMoveMarkdownView(t *testing.T) {
	in, _ := moveInput(t, true, "running")
	p, err := reconcile.NewPlan(in)
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	p.RenderMarkdownView(&md, reconcile.MarkdownView{})
	for _, want := range []string{"1 to move.**", "> [!NOTE]", "moves from local to far", "--confirm-delete alpha", "| `>` | `alpha` on host far | move |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown view lacks %q:\n%s", want, md.String())
		}
	}
}

// TestPlanMovePutBack: host: changed back while a move from the local
// engine to far is in progress.
func TestPlanMovePutBack(t *testing.T) {
	b := testBox("alpha")
	far := b
	far.Host = "far"
	rec := statedir.MoveRecord{Box: "alpha", From: "", To: "far", Archive: "backups/alpha-1.tar.zst.age", Saved: true}
	for _, c := range []struct {
		name     string
		verified bool
		stage    reconcile.MoveStage
		text     string
	}{
		{"before the new copy was verified", false, reconcile.MoveCancel, "remove that copy on far; the copy here is the box"},
		{"after the new copy was verified", true, reconcile.MoveSave, "is saved and moved back here; the stopped copy on local is replaced"},
	} {
		t.Run(c.name, func(t *testing.T) {
			local := emptyObserved()
			observeBox(t, local, b, testImage, "exited", 0)
			remote := emptyObserved()
			observeBox(t, remote, far, testImage, "running", 0)
			r := rec
			r.Verified = c.verified
			in := reconcile.Input{Config: testCfg(b), Image: testImage, Tokens: map[string]string{"alpha": testToken},
				Observed: map[string]*engine.Observed{"": local, "far": remote}, Moves: map[string]statedir.MoveRecord{"alpha": r}}
			p, err := reconcile.NewPlan(in)
			if err != nil {
				t.Fatal(err)
			}
			m := p.Boxes[0].Move
			if p.Boxes[0].Action != reconcile.Move || m.From != "far" || m.To != "" || m.Stage != c.stage || m.Unverified == nil {
				t.Fatalf("plan: %+v %+v", p.Boxes[0], m)
			}
			// What is removed first is never the copy that is the box.
			wantGone := "id-alpha-agent"
			if got := m.Unverified.Containers[0].ID; !strings.HasPrefix(got, wantGone) {
				t.Errorf("removes %s", got)
			}
			if c.stage == reconcile.MoveCancel && m.Old != nil {
				t.Errorf("a cancel deletes an old copy: %+v", m.Old)
			}
			var text bytes.Buffer
			p.RenderText(&text, false)
			if !strings.Contains(text.String(), c.text) {
				t.Errorf("text lacks %q:\n%s", c.text, text.String())
			}
		})
	}
}

// TestMovePlanGolden renders a plan with two moves, one new (data measured,
// image streamed) and one whose old copy's delete is all that is left, in
// every format.
func TestMovePlanGolden(t *testing.T) {
	local := emptyObserved()
	edge := &engine.Observed{Host: "edge", Images: map[string]bool{}}
	alpha, beta := testBox("alpha"), testBox("beta")
	observeBox(t, local, alpha, testImage, "running", 0)
	observeBox(t, local, beta, testImage, "exited", 0)
	edge.Images[testImage] = false
	local.ImageSizes = map[string]int64{testImage: 363 << 20}
	alpha.Host, beta.Host = "edge", "edge"
	observeBox(t, edge, beta, testImage, "running", 0)
	in := reconcile.Input{Config: testCfg(alpha, beta), Image: testImage,
		Observed: map[string]*engine.Observed{"": local, "edge": edge},
		Tokens:   map[string]string{"alpha": testToken, "beta": testToken},
		Moves: map[string]statedir.MoveRecord{"beta": {Box: "beta", From: "", To: "edge", Archive: "backups/beta-20261202-101500.tar.zst.age",
			Key: ".boxes/secrets/beta-20261202-101500.move-key", Saved: true, Verified: true, Bytes: 3 << 20}}}
	p, err := reconcile.NewPlan(in)
	if err != nil {
		t.Fatal(err)
	}
	p.SetMoveSizes(reconcile.MeasureMoves(context.Background(), in, p, func(string) engine.VolumeSizer {
		return &fakeSizer{sizes: map[string]engine.VolumeSize{compose.VolumeName("alpha", compose.AgentVolume): {Bytes: 200 << 20}}}
	})())
	var text, js, md, view bytes.Buffer
	p.RenderText(&text, false)
	if err := p.RenderJSON(&js); err != nil {
		t.Fatal(err)
	}
	p.RenderMarkdown(&md)
	p.RenderMarkdownView(&view, reconcile.MarkdownView{})
	golden(t, "move.txt", text.Bytes())
	golden(t, "move.json", js.Bytes())
	golden(t, "move.md", md.Bytes())
	golden(t, "move.view.md", view.Bytes())
}
