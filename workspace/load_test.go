package workspace_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/doctor"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/workspace"
)

// runner is a fake engine that runs commands in containers (hb doctor), all
// of them successfully and silently.
type runner struct{ *fakeEngine }

func (runner) Run(context.Context, string, string, []string, io.Writer, io.Writer) (int, error) {
	return 0, nil
}

// load runs its create, then doctor on the box it made, then, for a box
// declared stopped, the stop: each one-box plan through the caller's run.
func TestLoadCreatesDoctorsThenStops(t *testing.T) {
	f := newFleet(t)
	if err := os.WriteFile(filepath.Join(f.dir, "boxes.yaml"), []byte("version: 1\nfleet: t\nboxes:\n  alpha: {state: stopped}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lock := &spec.Lock{Version: 1, Image: &spec.Image{ID: "sha256:" + strings.Repeat("1", 64)}}
	if err := spec.WriteLock(filepath.Join(f.dir, "boxes.lock"), lock); err != nil {
		t.Fatal(err)
	}
	local := &reconcile.Observed{Images: map[string]bool{lock.Image.ID: true}}
	f.snapshots[""] = local
	ws := f.openWith(t, func(_ string, e *fakeEngine) workspace.Engine { return runner{e} })
	var steps []string
	run := func(p *reconcile.Plan) error {
		steps = append(steps, string(p.Boxes[0].Action)+" "+p.Boxes[0].Name)
		// The create leaves the box's agent container on the engine.
		local.Containers = []reconcile.Container{{ID: "c1", Box: "alpha", Service: compose.AgentService, State: "running", Image: lock.Image.ID}}
		return nil
	}
	res, err := ws.Load(context.Background(), filepath.Join(f.dir, "a.tar.zst.age"), "alpha", run, func(rep *doctor.Report) {
		steps = append(steps, "doctor "+rep.Box)
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"create alpha", "doctor alpha", "stop alpha"}; !reflect.DeepEqual(steps, want) {
		t.Errorf("steps %q, want %q", steps, want)
	}
	if res.Box != "alpha" || res.State != "stopped" || res.Doctor == nil || !strings.HasSuffix(res.Archive, "a.tar.zst.age") {
		t.Errorf("result %+v", res)
	}
}
