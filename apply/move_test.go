package apply_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/hermes-box/boxes/apply"
	boxarchive "github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/statedir"
)

// hostEngine is a fake engine of one host, journaling "HOST: step".
type hostEngine struct {
	host string
	j    *journal
}

func (e hostEngine) Capabilities() engine.Capabilities {
	return engine.Capabilities{Freeze: true, Rename: true}
}
func (e hostEngine) add(box, step string) { e.j.add(box, hostName(e.host)+": "+step) }
func hostName(h string) string {
	if h == "" {
		return "local"
	}
	return h
}
func (e hostEngine) Create(_ context.Context, p *types.Project, force bool) error {
	e.add(boxOf(p.Name), fmt.Sprintf("create force=%v", force))
	return nil
}
func (e hostEngine) Replace(_ context.Context, p *types.Project, services []string) error {
	e.add(boxOf(p.Name), fmt.Sprintf("replace %v", services))
	return nil
}
func (e hostEngine) Start(_ context.Context, p *types.Project) error {
	e.add(boxOf(p.Name), "start")
	return nil
}
func (e hostEngine) Stop(_ context.Context, project string) error {
	e.add(boxOf(project), "stop")
	return nil
}
func (e hostEngine) RemoveContainer(_ context.Context, id string) error {
	e.add("alpha", "rm container "+id)
	return nil
}
func (e hostEngine) Observe(context.Context, ...string) (*engine.Observed, error) {
	return &engine.Observed{}, nil
}
func (e hostEngine) RenameContainer(_ context.Context, from, to string) error {
	e.add("alpha", "rename container "+from+" "+to)
	return nil
}
func (e hostEngine) RemoveNetwork(_ context.Context, id string) error {
	e.add("alpha", "rm network "+id)
	return nil
}
func (e hostEngine) RemoveVolume(_ context.Context, name string) error {
	e.add("alpha", "rm volume "+name)
	return nil
}
func (e hostEngine) WaitInit(_ context.Context, box string) error {
	e.add(box, "init")
	return nil
}
func (e hostEngine) Previous(context.Context, string) (engine.Previous, error) { return nil, nil }
func (e hostEngine) WaitReady(_ context.Context, box, token string) (string, error) {
	if token != testToken {
		return "", fmt.Errorf("token %q, want the box's own", token)
	}
	e.add(box, "ready")
	return "http://127.0.0.1:1", nil
}

// fakeMover journals the data steps of a move; fail names one that fails.
type fakeMover struct {
	j    *journal
	fail string
	same bool
}

func (m *fakeMover) do(box, host, step string) error {
	m.j.add(box, hostName(host)+": "+step)
	if m.fail == step {
		return errors.New(step + " failed")
	}
	return nil
}
func (m *fakeMover) Save(_ context.Context, host, box, archive, key string) (int64, error) {
	if !strings.HasPrefix(filepath.Base(archive), box+"-") || !strings.HasSuffix(archive, boxarchive.Ext) || !strings.Contains(key, filepath.Join(".boxes", "secrets")) {
		return 0, fmt.Errorf("archive %s, key %s", archive, key)
	}
	return 42, m.do(box, host, "save")
}

// StreamImage and PullImage make a fakeMover the applier's ImageCarrier too.
func (m *fakeMover) StreamImage(_ context.Context, from, to, image string) error {
	return m.do("alpha", to, "stream image from "+hostName(from))
}
func (m *fakeMover) PullImage(_ context.Context, to, ref, image string) error {
	return m.do("alpha", to, "pull "+ref)
}
func (m *fakeMover) Restore(_ context.Context, host, box, archive, key string) error {
	return m.do(box, host, "restore")
}
func (m *fakeMover) Check(_ context.Context, host, box, archive, key string) (int, error) {
	return 3, m.do(box, host, "check")
}
func (m *fakeMover) Finish(_ context.Context, host, box string) error {
	return m.do(box, host, "finish")
}
func (m *fakeMover) Doctor(_ context.Context, host, box string) error {
	return m.do(box, host, "doctor")
}
func (m *fakeMover) SameEngine(context.Context, string, string) (bool, error) {
	return m.same, nil
}

func oldCopy() *reconcile.Deletion {
	return &reconcile.Deletion{
		Containers: []reconcile.NamedID{{Name: "hbl-alpha-agent-1", ID: "old-agent"}, {Name: "hbl-alpha-executor-1", ID: "old-exec"}},
		Networks:   []reconcile.NamedID{{Name: "hbl-alpha_default", ID: "old-net"}},
		Volumes:    []reconcile.DeletedVolume{{Name: "hbl-alpha_agent-data"}, {Name: "hbl-alpha_exec-data"}},
	}
}

func moveApplier(t *testing.T, m *fakeMover) (*apply.Applier, *journal) {
	t.Helper()
	b := testBox("alpha")
	b.Host = "far"
	cfg := testCfg(b)
	cfg.Path = filepath.Join(t.TempDir(), "boxes.yaml")
	tokens := statedir.Beside(cfg.Path).Tokens()
	if err := tokens.Put("alpha", testToken); err != nil {
		t.Fatal(err)
	}
	m.j = &journal{}
	a := &apply.Applier{Config: cfg, Tokens: tokens, Parallelism: 1, Progress: quietProgress{m.j}, Mover: m, Images: m,
		Engines: map[string]engine.Lifecycle{"": hostEngine{"", m.j}, "far": hostEngine{"far", m.j}}}
	return a, m.j
}

func movePlan(stage reconcile.MoveStage, unverified bool) *reconcile.Plan {
	mv := &reconcile.Moving{From: "", To: "far", Stage: stage, Size: -1, Old: oldCopy()}
	if unverified {
		mv.Unverified = &reconcile.Deletion{Containers: []reconcile.NamedID{{Name: "hbl-alpha-agent-1", ID: "new-agent"}}}
	}
	return &reconcile.Plan{Image: testImage, Boxes: []reconcile.BoxPlan{{Name: "alpha", Host: "far", Action: reconcile.Move, State: spec.Running, Move: mv}}}
}

var (
	moveIn = []string{"far: create force=false", "far: restore", "far: check", "far: start", "far: ready", "far: finish", "far: doctor"}
	delOld = []string{"local: rm container old-agent", "local: rm container old-exec", "local: rm network old-net", "local: rm volume hbl-alpha_agent-data", "local: rm volume hbl-alpha_exec-data"}
)

func steps(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return append(out, "done")
}

func TestApplierMoveSteps(t *testing.T) {
	// Confirmed: the old copy goes only after the new one is checked and doctored.
	a, j := moveApplier(t, &fakeMover{})
	a.ConfirmedDeletes = map[string]bool{"alpha": true}
	if err := a.Apply(context.Background(), movePlan(reconcile.MoveSave, false)); err != nil {
		t.Fatal(err)
	}
	want := steps([]string{"local: stop", "local: save"}, moveIn, delOld)
	if got := j.of("alpha"); !reflect.DeepEqual(got, want) {
		t.Errorf("confirmed move:\n got %q\nwant %q", got, want)
	}
	moves := statedir.Beside(a.Config.Path).Moves()
	if _, found, _ := moves.Get("alpha"); found {
		t.Error("the record of a finished move is kept")
	}
	if tok, _, _ := a.Tokens.Get("alpha"); tok != testToken {
		t.Errorf("a move changed the token to %q", tok)
	}

	// Unconfirmed: the move stops once verified; the old copy stays, stopped.
	a, j = moveApplier(t, &fakeMover{})
	if err := a.Apply(context.Background(), movePlan(reconcile.MoveSave, false)); err != nil {
		t.Fatal(err)
	}
	if got, want := j.of("alpha"), steps([]string{"local: stop", "local: save"}, moveIn); !reflect.DeepEqual(got, want) {
		t.Errorf("unconfirmed move:\n got %q\nwant %q", got, want)
	}
	rec, found, err := statedir.Beside(a.Config.Path).Moves().Get("alpha")
	if err != nil || !found || !rec.Saved || !rec.Verified || rec.Bytes != 42 || rec.From != "" || rec.To != "far" {
		t.Errorf("record after an unconfirmed move: %+v %v %v", rec, found, err)
	}

	// Resumed from a saved archive with an unverified copy on the new host.
	a, j = moveApplier(t, &fakeMover{})
	if err := statedir.Beside(a.Config.Path).Moves().Put(statedir.MoveRecord{Box: "alpha", To: "far", Archive: "backups/alpha-1.tar.zst.age", Key: "k", Saved: true}); err != nil {
		t.Fatal(err)
	}
	a.ConfirmedDeletes = map[string]bool{"alpha": true}
	p := movePlan(reconcile.MoveRestore, true)
	local := ""
	p.Images = []reconcile.ImageTransfer{{Image: testImage, To: "far", From: &local, Bytes: 1 << 20}}
	if err := a.Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if got, want := j.of("alpha"), steps([]string{"far: stream image from local", "far: rm container new-agent"}, moveIn, delOld); !reflect.DeepEqual(got, want) {
		t.Errorf("resumed move:\n got %q\nwant %q", got, want)
	}
}

func TestApplierMoveNeverDeletesUnverified(t *testing.T) {
	for _, step := range []string{"save", "restore", "check", "finish", "doctor"} {
		a, j := moveApplier(t, &fakeMover{fail: step})
		a.ConfirmedDeletes = map[string]bool{"alpha": true}
		err := a.Apply(context.Background(), movePlan(reconcile.MoveSave, false))
		if err == nil || !strings.Contains(err.Error(), step+" failed") {
			t.Errorf("%s failing: %v", step, err)
		}
		for _, s := range j.of("alpha") {
			if strings.HasPrefix(s, "local: rm") {
				t.Errorf("%s failing: the old copy was removed: %q", step, j.of("alpha"))
				break
			}
		}
		rec, _, _ := statedir.Beside(a.Config.Path).Moves().Get("alpha")
		if rec.Verified {
			t.Errorf("%s failing: recorded as verified", step)
		}
	}

	// Two hosts that are one engine: nothing is done at all.
	a, j := moveApplier(t, &fakeMover{same: true})
	a.ConfirmedDeletes = map[string]bool{"alpha": true}
	if err := a.Apply(context.Background(), movePlan(reconcile.MoveSave, false)); !errors.Is(err, apply.ErrSameEngine) {
		t.Errorf("same engine: %v", err)
	}
	if got := j.of("alpha"); len(got) != 1 {
		t.Errorf("same engine did %q", got)
	}

	// An old copy started again after its save is not deleted.
	a, j = moveApplier(t, &fakeMover{})
	if err := statedir.Beside(a.Config.Path).Moves().Put(statedir.MoveRecord{Box: "alpha", To: "far", Saved: true, Verified: true}); err != nil {
		t.Fatal(err)
	}
	a.ConfirmedDeletes = map[string]bool{"alpha": true}
	p := movePlan(reconcile.MoveDeleteOld, false)
	p.Boxes[0].Move.OldRunning = true
	if err := a.Apply(context.Background(), p); err == nil || !strings.Contains(err.Error(), "runs again") {
		t.Errorf("old copy running: %v", err)
	}
	if got := j.of("alpha"); len(got) != 1 {
		t.Errorf("old copy running: did %q", got)
	}
}

func TestApplierMoveCancel(t *testing.T) {
	a, j := moveApplier(t, &fakeMover{})
	// The box is declared on far again; a move from far to the local engine was cut short.
	if err := statedir.Beside(a.Config.Path).Moves().Put(statedir.MoveRecord{Box: "alpha", From: "far", To: "", Saved: true}); err != nil {
		t.Fatal(err)
	}
	p := &reconcile.Plan{Image: testImage, Boxes: []reconcile.BoxPlan{{Name: "alpha", Host: "far", Action: reconcile.Move, State: spec.Running,
		Move: &reconcile.Moving{From: "", To: "far", Stage: reconcile.MoveCancel, Unverified: oldCopy()}}}}
	if err := a.Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if got, want := j.of("alpha"), steps(delOld, []string{"far: start", "far: ready", "far: init"}); !reflect.DeepEqual(got, want) {
		t.Errorf("cancel:\n got %q\nwant %q", got, want)
	}
	if _, found, _ := statedir.Beside(a.Config.Path).Moves().Get("alpha"); found {
		t.Error("the record of a cancelled move is kept")
	}
}
