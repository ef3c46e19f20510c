package workspace_test

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"filippo.io/age"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/doctor"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/workspace"
)

// loadEngine is a fake engine that creates, seeds, starts and stops one
// box, noting each create and stop in steps: what a load's plans ask of
// the box's host. Every command run in the box succeeds silently, but for
// the listing of /data, which lists what the restore copied in.
type loadEngine struct {
	*fakeEngine
	image string
	steps *[]string
	mu    sync.Mutex
	// copied is what CopyTo unpacked at /, as find lists it.
	copied []string
}

func (e *loadEngine) Create(_ context.Context, p *types.Project, _ bool) error {
	box := strings.TrimPrefix(p.Name, "hbl-")
	*e.steps = append(*e.steps, "create "+box)
	// The create leaves the box's agent container on the engine.
	e.obs.Containers = []engine.Container{{ID: "c1", Box: box, Service: compose.AgentService, State: "running", Image: e.image}}
	return nil
}
func (e *loadEngine) Replace(context.Context, *types.Project, []string) error { return nil }
func (e *loadEngine) Start(context.Context, *types.Project) error             { return nil }
func (e *loadEngine) Stop(_ context.Context, project string) error {
	*e.steps = append(*e.steps, "stop "+strings.TrimPrefix(project, "hbl-"))
	return nil
}
func (e *loadEngine) WaitReady(context.Context, string, string) (string, error) {
	return "http://127.0.0.1:4801", nil
}
func (e *loadEngine) WaitInit(context.Context, string) error { return nil }
func (e *loadEngine) ContainerID(context.Context, string, string) (string, error) {
	return "c1", nil
}
func (e *loadEngine) VolumeRoom(context.Context, string, string) (int64, error) { return 1 << 40, nil }

func (e *loadEngine) CopyTo(_ context.Context, _, dir string, content io.Reader) error {
	tr := tar.NewReader(content)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		kind := map[byte]byte{tar.TypeDir: 'd', tar.TypeReg: 'f', tar.TypeSymlink: 'l'}[h.Typeflag]
		e.mu.Lock()
		e.copied = append(e.copied, fmt.Sprintf("%c %d %s\x00%s\x00", kind, h.Size, filepath.Join(dir, h.Name), h.Linkname))
		e.mu.Unlock()
	}
}

func (e *loadEngine) Run(_ context.Context, _, _ string, cmd []string, stdout, _ io.Writer) (int, error) {
	if reflect.DeepEqual(cmd, archive.ListCommand("/data")) {
		e.mu.Lock()
		defer e.mu.Unlock()
		_, err := io.WriteString(stdout, strings.Join(e.copied, ""))
		return 0, err
	}
	return 0, nil
}

// load runs its create, then doctor on the box it made, then, for a box
// declared stopped, the stop: each one-box plan through the applier.
func TestLoadCreatesDoctorsThenStops(t *testing.T) {
	f := newFleet(t)
	if err := os.WriteFile(filepath.Join(f.dir, "boxes.yaml"), []byte("version: 1\nfleet: t\nboxes:\n  alpha: {state: stopped}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lock := &spec.Lock{Version: 1, Image: &spec.Image{ID: "sha256:" + strings.Repeat("1", 64)}}
	if err := spec.WriteLock(filepath.Join(f.dir, "boxes.lock"), lock); err != nil {
		t.Fatal(err)
	}
	writeArchive(t, f.dir, "a"+archive.Ext, lock.Image.ID)
	f.snapshots[""] = &engine.Observed{Images: map[string]bool{lock.Image.ID: true}}
	var steps []string
	ws := f.openWith(t, func(_ string, e *fakeEngine) engine.Engine {
		return &loadEngine{fakeEngine: e, image: lock.Image.ID, steps: &steps}
	})
	o := workspace.ApplyOptions{Identities: func(string) ([]age.Identity, error) {
		id, err := archive.PassphraseIdentity("pw")
		return []age.Identity{id}, err
	}}
	res, err := ws.Load(context.Background(), filepath.Join(f.dir, "a"+archive.Ext), "alpha", o, func(rep *doctor.Report) {
		steps = append(steps, "doctor "+rep.Box)
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"create alpha", "doctor alpha", "stop alpha"}; !reflect.DeepEqual(steps, want) {
		t.Errorf("steps %q, want %q", steps, want)
	}
	if res.Box != "alpha" || res.State != "stopped" || res.Doctor == nil || !strings.HasSuffix(res.Archive, "a"+archive.Ext) {
		t.Errorf("result %+v", res)
	}
}
