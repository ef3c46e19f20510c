package apply_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/hermes-box/boxes/apply"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/statedir"
)

// makingEngine is the journaling fake whose engine holds what was made:
// a create makes the box's network and volumes, then fails as an engine
// refusing the containers' settings does, leaving them.
type makingEngine struct {
	*fakeEngine
	mu  sync.Mutex
	now engine.Observed
	// refuse is the error of every create.
	refuse error
}

func (m *makingEngine) Observe(context.Context, ...string) (*engine.Observed, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o := m.now
	o.Containers = append([]engine.Container(nil), m.now.Containers...)
	o.Volumes = append([]engine.Volume(nil), m.now.Volumes...)
	o.Networks = append([]engine.Network(nil), m.now.Networks...)
	return &o, nil
}

func (m *makingEngine) Create(ctx context.Context, p *types.Project, force bool) error {
	if err := m.fakeEngine.Create(ctx, p, force); err != nil {
		return err
	}
	box := boxOf(p.Name)
	m.mu.Lock()
	defer m.mu.Unlock()
	has := map[string]bool{}
	for _, v := range m.now.Volumes {
		has[v.Name] = true
	}
	for _, v := range []string{compose.AgentVolume, compose.ExecutorVolume} {
		if name := box + "/" + compose.VolumeName(box, v); !has[name] {
			m.now.Volumes = append(m.now.Volumes, engine.Volume{Name: name, Box: box, Fleet: testFleet, Size: -1})
		}
	}
	m.now.Networks = append(m.now.Networks, engine.Network{ID: box + "/net", Name: compose.NetworkName(box), Box: box, Fleet: testFleet})
	return m.refuse
}

func (m *makingEngine) RemoveNetwork(ctx context.Context, id string) error {
	m.mu.Lock()
	m.now.Networks = slices.DeleteFunc(m.now.Networks, func(n engine.Network) bool { return n.ID == id })
	m.mu.Unlock()
	return m.fakeEngine.RemoveNetwork(ctx, id)
}

func (m *makingEngine) RemoveVolume(ctx context.Context, name string) error {
	m.mu.Lock()
	m.now.Volumes = slices.DeleteFunc(m.now.Volumes, func(v engine.Volume) bool { return v.Name == name })
	m.mu.Unlock()
	return m.fakeEngine.RemoveVolume(ctx, name)
}

func newMakingApplier(t *testing.T, refuse error, boxes ...spec.Box) (*apply.Applier, *journal, *makingEngine) {
	t.Helper()
	a, j, f := newApplier(t, boxes...)
	m := &makingEngine{fakeEngine: f, refuse: refuse}
	a.Engines[""] = m
	return a, j, m
}

// A create the engine refuses, of a box the plan found with nothing,
// leaves nothing behind: the network and the (new, empty) volumes it made
// are removed, with its token and restore record, so that the next plan
// shows a plain create again.
func TestApplierUndoesARefusedCreate(t *testing.T) {
	refused := errors.New("Error response from daemon: range of CPUs is from 0.01 to 2.00, as there are only 2 CPUs available")
	for _, restore := range []string{"", "backups/a.tar.zst.age"} {
		a, j, m := newMakingApplier(t, refused, testBox("alpha"))
		reasons := []reconcile.Reason{{Kind: "new"}}
		if restore != "" {
			reasons = append(reasons, reconcile.Reason{Kind: "restore", New: restore})
		}
		err := a.Apply(context.Background(), &reconcile.Plan{Image: testImage, Boxes: []reconcile.BoxPlan{
			{Name: "alpha", Action: reconcile.Create, State: spec.Running, Restore: restore, Reasons: reasons}}})
		if !errors.Is(err, refused) {
			t.Fatalf("err = %v, want the engine's refusal", err)
		}
		var ce *apply.CreateError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "what the create made was removed (0 containers, 1 network, 2 volumes), nothing else was touched") {
			t.Errorf("err = %v", err)
		}
		want := []string{"create", "rm network alpha/net",
			"rm volume alpha/" + compose.VolumeName("alpha", compose.AgentVolume), "rm volume alpha/" + compose.VolumeName("alpha", compose.ExecutorVolume)}
		if got := j.of("alpha"); !reflect.DeepEqual(got[:len(got)-1], want) {
			t.Errorf("restore %q: steps %q, want %q", restore, got, want)
		}
		if o, _ := m.Observe(context.Background()); !o.Of("alpha").Empty() {
			t.Errorf("left behind: %+v", o.Of("alpha"))
		}
		if _, ok, _ := a.Tokens.Get("alpha"); ok {
			t.Error("the token of a box that is not there is still stored")
		}
		if _, ok, err := statedir.Beside(a.Config.Path).Restores().Get("alpha"); ok || err != nil {
			t.Errorf("the restore record of a box that is not there is still kept (%v)", err)
		}
	}
}

// Only what this very create made goes, and only when nothing of the box
// was there before it: volumes that were there (a load that made the box
// since the plan, a restore cut short) hold data, and stay.
func TestApplierKeepsWhatWasThereBeforeARefusedCreate(t *testing.T) {
	refused := errors.New("Error response from daemon: Minimum memory limit allowed is 6MB")
	agentData := "alpha/" + compose.VolumeName("alpha", compose.AgentVolume)

	t.Run("made since the plan", func(t *testing.T) {
		a, j, m := newMakingApplier(t, refused, testBox("alpha"))
		m.now.Volumes = []engine.Volume{{Name: agentData, Box: "alpha", Fleet: testFleet, Size: -1}}
		err := a.Apply(context.Background(), &reconcile.Plan{Image: testImage, Boxes: []reconcile.BoxPlan{
			{Name: "alpha", Action: reconcile.Create, State: spec.Running, Reasons: []reconcile.Reason{{Kind: "new"}}}}})
		if !errors.Is(err, refused) || strings.Contains(err.Error(), "removed") {
			t.Errorf("err = %v", err)
		}
		if got := j.of("alpha"); !reflect.DeepEqual(got, []string{"create", "done: " + refused.Error()}) {
			t.Errorf("steps %q: something was removed", got)
		}
	})
	t.Run("restore cut short", func(t *testing.T) {
		a, j, m := newMakingApplier(t, refused, testBox("alpha"))
		m.now.Volumes = []engine.Volume{{Name: agentData, Box: "alpha", Fleet: testFleet, Size: -1}}
		archive := "backups/a.tar.zst.age"
		err := a.Apply(context.Background(), &reconcile.Plan{Image: testImage, Boxes: []reconcile.BoxPlan{
			{Name: "alpha", Action: reconcile.Create, State: spec.Running, Restore: archive, Reasons: []reconcile.Reason{{Kind: "incomplete", New: archive}}}}})
		if !errors.Is(err, refused) {
			t.Errorf("err = %v", err)
		}
		if got := j.of("alpha"); !reflect.DeepEqual(got, []string{"create", "done: " + refused.Error()}) {
			t.Errorf("steps %q: something was removed", got)
		}
		if _, ok, err := statedir.Beside(a.Config.Path).Restores().Get("alpha"); !ok || err != nil {
			t.Errorf("the record of the restore cut short is gone (%v): the next plan would not seed the box again", err)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		a, j, _ := newMakingApplier(t, engine.ErrUnreachable, testBox("alpha"))
		err := a.Apply(context.Background(), &reconcile.Plan{Image: testImage, Boxes: []reconcile.BoxPlan{
			{Name: "alpha", Action: reconcile.Create, State: spec.Running, Reasons: []reconcile.Reason{{Kind: "new"}}}}})
		if !errors.Is(err, engine.ErrUnreachable) {
			t.Errorf("err = %v", err)
		}
		if got := j.of("alpha"); len(got) != 2 {
			t.Errorf("steps %q: a create cut short is the next plan's to finish", got)
		}
	})
}
