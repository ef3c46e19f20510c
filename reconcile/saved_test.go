package reconcile_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
)

func savedFixture() (map[string]string, map[string]*engine.Observed, *reconcile.Plan) {
	files := map[string]string{"boxes.yaml": "aa", "boxes.lock": "bb"}
	obs := map[string]*engine.Observed{"": {
		Containers: []engine.Container{{ID: "c1", Name: "hbl-old-agent-1", Box: "old", Service: "agent", State: "running", Health: engine.Healthy}},
		Volumes:    []engine.Volume{{Name: "hbl-old_agent-data", Box: "old", Size: 100}},
	}}
	p := &reconcile.Plan{Image: testImage, Boxes: []reconcile.BoxPlan{
		{Name: "alpha", Action: reconcile.NoOp},
		reconcile.DeletePlan("", "old", obs[""].Of("old"), "backups/old-1.tar.gz.age").Boxes[0],
	}}
	p.Boxes[1].Delete.Volumes[0].Size = 100
	return files, obs, p
}

func TestSavedPlanRoundTripAndFreshness(t *testing.T) {
	files, obs, p := savedFixture()
	path := filepath.Join(t.TempDir(), "plan.json")
	opts := reconcile.PlanOptions{Replace: []string{"alpha"}, Target: []string{"alpha", "old"}}
	if err := reconcile.WriteSaved(path, reconcile.Fingerprint(files, "", obs, p), opts, p); err != nil {
		t.Fatal(err)
	}
	s, err := reconcile.ReadSaved(path, "plan.json")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(s.Options.Replace, ",") != "alpha" || len(s.Options.Target) != 2 {
		t.Errorf("options did not survive: %+v", s.Options)
	}
	if err := s.Fresh("plan.json", files, "", obs, p); err != nil {
		t.Errorf("an unchanged world: %v", err)
	}

	// What changes on its own leaves the plan fresh: the size of a volume
	// it deletes, the health of a container, a new backup.
	_, obs2, p2 := savedFixture()
	obs2[""].Volumes[0].Size = 5000
	obs2[""].Containers[0].Health = engine.Unhealthy
	p2.Boxes[1].Delete.Volumes[0].Size = 5000
	p2.Boxes[1].Delete.Backup = "backups/old-2.tar.gz.age"
	if err := s.Fresh("plan.json", files, "", obs2, p2); err != nil {
		t.Errorf("volatile fields made the plan stale: %v", err)
	}

	// A changed file or container makes it stale.
	stale := map[string]string{"boxes.yaml": "cc", "boxes.lock": "bb"}
	if err := s.Fresh("plan.json", stale, "", obs, p); !errors.Is(err, reconcile.ErrStalePlan) {
		t.Errorf("changed boxes.yaml: %v", err)
	}
	_, obs3, _ := savedFixture()
	obs3[""].Containers[0].State = "exited"
	if err := s.Fresh("plan.json", files, "", obs3, p); !errors.Is(err, reconcile.ErrStalePlan) {
		t.Errorf("changed container: %v", err)
	}
}

func TestSavedPlanEditedByHandIsRefused(t *testing.T) {
	files, obs, p := savedFixture()
	path := filepath.Join(t.TempDir(), "plan.json")
	if err := reconcile.WriteSaved(path, reconcile.Fingerprint(files, "", obs, p), reconcile.PlanOptions{}, p); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	edited := strings.Replace(string(data), `"action": "no-op"`, `"action": "stop"`, 1)
	if edited == string(data) {
		t.Fatal("fixture has no no-op to edit")
	}
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := reconcile.ReadSaved(path, "plan.json")
	if err != nil {
		t.Fatal(err)
	}
	err = s.Fresh("plan.json", files, "", obs, p)
	var stale *reconcile.StaleError
	if !errors.As(err, &stale) || !stale.Edited || !errors.Is(err, reconcile.ErrStalePlan) {
		t.Errorf("a hand-edited action: %v", err)
	}
}

func TestReadSavedRefusals(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ content, want string }{
		"not json":      {"hello", "not a saved boxes plan"},
		"other version": {`{"saved_plan_version": 9, "plan": {"boxes": []}}`, "version 9; this boxes reads version 1"},
		"no plan":       {`{"saved_plan_version": 1}`, "not a saved boxes plan"},
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := reconcile.ReadSaved(path, name); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	if _, err := reconcile.ReadSaved(filepath.Join(dir, "nope"), "nope"); err == nil || !strings.Contains(err.Error(), "no such plan file") {
		t.Errorf("missing: %v", err)
	}
}
