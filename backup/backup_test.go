package backup

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/internal/sideorder"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/statedir"
)

func init() { archive.ScryptWorkFactor = 10 }

// fakeBox is an engine holding one agent container with a tiny /data.
type fakeBox struct {
	mu       sync.Mutex
	hbCalls  []string
	copied   []string
	unready  int // hb health fails this many times
	free     int64
	measures []string // VolumeRoom's image and box, per call
	copyFrom func(ctx context.Context) (io.ReadCloser, error)
	// written is what CopyTo wrote into /data, as the box's listing
	// (archive.ListCommand) shows it, in order; listed, when set, changes
	// the listing of it, as an engine that lost or cut short a file would.
	written []string
	listed  func(entries []string) []string
	// noFreeze makes an engine that cannot pause (engine.Capabilities).
	noFreeze bool
	// duHangs: du never answers until its context ends, as an exec whose
	// end the engine missed.
	duHangs bool
}

func (f *fakeBox) Run(ctx context.Context, id, user string, cmd []string, stdout, stderr io.Writer) (int, error) {
	if cmd[0] == "du" && f.duHangs {
		<-ctx.Done()
		return -1, context.Cause(ctx)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if cmd[0] != hb.Path {
		f.hbCalls = append(f.hbCalls, cmd[0])
		switch cmd[0] {
		case "du":
			f.hbCalls[len(f.hbCalls)-1] = strings.Join(cmd, " ")
			_, _ = io.WriteString(stdout, "4096\t/data\n")
		case "find":
			listing := f.written
			if f.listed != nil {
				listing = f.listed(slices.Clone(listing))
			}
			_, _ = io.WriteString(stdout, strings.Join(listing, ""))
		}
		return 0, nil
	}
	f.hbCalls = append(f.hbCalls, strings.Join(cmd[1:], " "))
	if cmd[1] == "health" && f.unready > 0 {
		f.unready--
		return 1, nil
	}
	return 0, nil
}

func (f *fakeBox) ContainerID(_ context.Context, box, service string) (string, error) {
	return box + "-" + service, nil
}

func (f *fakeBox) CopyFrom(ctx context.Context, id, path string) (io.ReadCloser, error) {
	if f.copyFrom != nil {
		return f.copyFrom(ctx)
	}
	return io.NopCloser(dataTar()), nil
}

func (f *fakeBox) CopyTo(_ context.Context, id, dir string, content io.Reader) error {
	tr := tar.NewReader(content)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		f.mu.Lock()
		f.copied = append(f.copied, h.Name)
		kind, size := "d", int64(4096)
		switch h.Typeflag {
		case tar.TypeReg:
			kind, size = "f", h.Size
		case tar.TypeSymlink:
			kind, size = "l", int64(len(h.Linkname))
		}
		f.written = append(f.written, kind+" "+strconv.FormatInt(size, 10)+" /"+strings.TrimSuffix(h.Name, "/")+"\x00"+h.Linkname+"\x00")
		f.mu.Unlock()
	}
}

func (f *fakeBox) Capabilities() engine.Capabilities {
	return engine.Capabilities{Freeze: !f.noFreeze, Rename: true}
}

func (f *fakeBox) Pause(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hbCalls = append(f.hbCalls, "pause")
	return nil
}

func (f *fakeBox) Unpause(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hbCalls = append(f.hbCalls, "unpause")
	return nil
}

func (f *fakeBox) VolumeRoom(_ context.Context, image, box string) (int64, error) {
	f.mu.Lock()
	f.measures = append(f.measures, image+" "+box)
	f.mu.Unlock()
	if f.free == 0 {
		return 1 << 40, nil
	}
	return f.free, nil
}

func (f *fakeBox) ToolVersions(context.Context, string) (map[string]string, error) {
	return map[string]string{"node": "22.0.0"}, nil
}

func dataTar() io.Reader {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	for _, d := range []string{"data/", "data/home/", "data/home/agent/"} {
		_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: now})
	}
	body := []byte("hello\n")
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "data/home/agent/notes.txt", Mode: 0o644, Size: int64(len(body)), ModTime: now})
	_, _ = tw.Write(body)
	_ = tw.Close()
	return &buf
}

func keys(t *testing.T) ([]age.Recipient, age.Identity) {
	t.Helper()
	r, id, err := Keys(nil, func() (string, error) { return "pass", nil })
	if err != nil {
		t.Fatal(err)
	}
	return r, id
}

func TestSaveQuiescesVerifiesPublishesResumes(t *testing.T) {
	e := &fakeBox{}
	r, id := keys(t)
	out := filepath.Join(t.TempDir(), "backups", "alpha-20260101-000000"+archive.Ext)
	var steps []string
	saved, err := Save{Box: "alpha", Agent: engine.Container{ID: "a", State: "running", Image: "sha256:1"}, Out: out,
		Recipients: r, Identity: id, Writer: "boxes test", Init: hb.Wait{Timeout: time.Second},
		Step: func(m string) { steps = append(steps, m) }}.Run(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if saved.Size != info.Size() || saved.Summary.Files != 1 {
		t.Errorf("saved %+v; the file has %d bytes", saved, info.Size())
	}
	if got := saveCalls(e.hbCalls); got != "health agent|du -sbx /data|pause|unpause" {
		t.Errorf("hb calls %q", got)
	}
	m, _, err := archive.VerifyFile(out, id)
	if err != nil || m.Box != "alpha" || m.Tools["node"] != "22.0.0" {
		t.Errorf("archive: %+v, %v", m, err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
	if _, err := (Save{Box: "alpha", Out: out}).Run(context.Background(), e); !errors.Is(err, ErrExists) {
		t.Errorf("a second save to the same name: %v", err)
	}
}

// A box observed healthy has finished hb init: the save does not ask again.
func TestSaveOfAHealthyBoxSkipsTheInitCheck(t *testing.T) {
	e := &fakeBox{}
	r, id := keys(t)
	out := filepath.Join(t.TempDir(), "a"+archive.Ext)
	if _, err := (Save{Box: "alpha", Agent: engine.Container{ID: "a", State: "running", Health: engine.Healthy}, Out: out,
		Recipients: r, Identity: id}).Run(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	if got := saveCalls(e.hbCalls); got != "du -sbx /data|pause|unpause" {
		t.Errorf("hb calls %q", got)
	}
}

// An engine that cannot freeze has the box quiesced by hb instead of
// paused, and resumed by hb after: nothing asks it to pause.
func TestSaveOnAnEngineWithoutFreezeQuiesces(t *testing.T) {
	e := &fakeBox{noFreeze: true}
	r, id := keys(t)
	out := filepath.Join(t.TempDir(), "a"+archive.Ext)
	if _, err := (Save{Box: "alpha", Agent: engine.Container{ID: "a", State: engine.Running, Health: engine.Healthy}, Out: out,
		Recipients: r, Identity: id}).Run(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(sideorder.Before(e.hbCalls, "du -sbx /data", "quiesce"), "|")
	if got != "du -sbx /data|quiesce|resume" {
		t.Errorf("hb calls %q", got)
	}
}

// A du that never answers (an exec whose end the engine missed) does not
// hold the save: after DataSizeTimeout it goes on without the measure, and
// the archive records no size bound.
func TestSaveGoesOnWithoutASizeWhenDuHangs(t *testing.T) {
	defer func(d time.Duration) { DataSizeTimeout = d }(DataSizeTimeout)
	DataSizeTimeout = 50 * time.Millisecond
	e := &fakeBox{duHangs: true}
	r, id := keys(t)
	out := filepath.Join(t.TempDir(), "a"+archive.Ext)
	var warned []string
	_, err := Save{Box: "alpha", Agent: engine.Container{ID: "a", State: "running", Health: engine.Healthy}, Out: out,
		Recipients: r, Identity: id, Warn: func(f string, a ...any) { warned = append(warned, fmt.Sprintf(f, a...)) }}.Run(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "du took over 50ms") || !strings.Contains(warned[0], "no size bound") {
		t.Errorf("warnings %q", warned)
	}
	m, _, err := archive.VerifyFile(out, id)
	if err != nil || m.Size != 0 {
		t.Errorf("archive: size %d, %v", m.Size, err)
	}
	if got := saveCalls(e.hbCalls); got != "pause|unpause" {
		t.Errorf("hb calls %q", got)
	}
}

// Ctrl-C while /data streams: the save fails and the box is resumed all the same.
func TestSaveResumesTheBoxWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	e := &fakeBox{copyFrom: func(ctx context.Context) (io.ReadCloser, error) {
		cancel()
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	r, id := keys(t)
	out := filepath.Join(t.TempDir(), "a"+archive.Ext)
	_, err := Save{Box: "alpha", Agent: engine.Container{ID: "a", State: "running"}, Out: out, Recipients: r, Identity: id}.Run(ctx, e)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v", err)
	}
	if got := saveCalls(e.hbCalls); got != "health agent|du -sbx /data|pause|unpause" {
		t.Errorf("hb calls %q: the box was not unpaused", got)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a cancelled save published an archive")
	}
}

// oneHost is every host's engine e.
type oneHost struct{ e engine.Inside }

func (h oneHost) BoxEngine(context.Context, string) (engine.Inside, error) { return h.e, nil }

// The wait for hb init is a progress step of the box, not a line of its
// own that would break the live display.
func TestSeederReportsTheInitWaitAsAStep(t *testing.T) {
	e := &fakeBox{unready: 8}
	var mu sync.Mutex
	var steps []string
	s := &Seeder{
		Hosts: oneHost{e},
		Init:  hb.Wait{Timeout: 5 * time.Second, Poll: 150 * time.Millisecond},
		Step: func(box, msg string) {
			mu.Lock()
			steps = append(steps, box+": "+msg)
			mu.Unlock()
		},
	}
	if err := s.Finish(context.Background(), "", "alpha"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(steps, "|"); got != "alpha: waiting for hb init to finish" {
		t.Errorf("steps %q", got)
	}
	if e.hbCalls[0] != "resume" {
		t.Errorf("Finish did not resume first: %q", e.hbCalls)
	}
}

// apply's Seeder has no Init: hb resume returns once hb init ran, and apply
// waits for the whole box next, so Finish probes nothing after the resume.
func TestSeederWithoutInitOnlyResumes(t *testing.T) {
	e := &fakeBox{}
	s := &Seeder{Hosts: oneHost{e}}
	if err := s.Finish(context.Background(), "", "alpha"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.hbCalls, "|"); got != "resume" {
		t.Errorf("Finish without Init ran %q, want resume alone", got)
	}
	e = &fakeBox{}
	s.Hosts, s.Init = oneHost{e}, hb.Wait{Timeout: 5 * time.Second}
	if err := s.Finish(context.Background(), "", "alpha"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.hbCalls, "|"); got != "resume|health agent" {
		t.Errorf("Finish with Init ran %q, want resume then the wait's probe", got)
	}
}

func TestRestoreWritesTheMarkerFirst(t *testing.T) {
	e := &fakeBox{}
	r, id := keys(t)
	file := filepath.Join(t.TempDir(), "a"+archive.Ext)
	if _, err := (Save{Box: "alpha", Agent: engine.Container{ID: "a"}, Out: file, Recipients: r, Identity: id}).Run(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	if err := Restore(context.Background(), e, "b", file, []age.Identity{id}, 0); err != nil {
		t.Fatal(err)
	}
	if len(e.copied) < 3 || e.copied[1] != hb.QuiescedMarker {
		t.Errorf("copied %q; want the marker before the data", e.copied)
	}
}

func TestCheckRestoresAsksOnceAndRefusesABadArchive(t *testing.T) {
	e := &fakeBox{}
	r, id := keys(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good"+archive.Ext)
	if _, err := (Save{Box: "alpha", Agent: engine.Container{ID: "a"}, Out: good, Recipients: r, Identity: id}).Run(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	p := &reconcile.Plan{Boxes: []reconcile.BoxPlan{
		{Name: "a", Action: reconcile.Create, Restore: "good" + archive.Ext},
		{Name: "b", Action: reconcile.Create, Restore: good},
		{Name: "c", Action: reconcile.Create},
	}}
	asked := 0
	ids, checked, err := CheckRestores(context.Background(), p, dir, func(string) ([]age.Identity, error) { asked++; return []age.Identity{id}, nil }, asTyped)
	if err != nil || asked != 1 || len(ids) != 1 || len(checked) != 2 {
		t.Errorf("asked %d, checked %d, %v", asked, len(checked), err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad"+archive.Ext), []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.Boxes[1].Restore = "bad" + archive.Ext
	if _, _, err := CheckRestores(context.Background(), p, dir, func(string) ([]age.Identity, error) { return []age.Identity{id}, nil }, asTyped); err == nil || !strings.Contains(err.Error(), "box b: restore: bad") {
		t.Errorf("bad archive: %v", err)
	}
	ids, _, err = CheckRestores(context.Background(), &reconcile.Plan{}, dir, nil, asTyped)
	if ids != nil || err != nil {
		t.Errorf("a plan without restores: %v %v", ids, err)
	}
}

// A partial archive is removed once the save writing it is gone, never while
// it runs.
func TestRemoveLeftoversKeepsRunningSaves(t *testing.T) {
	dir := t.TempDir()
	running, err := createPartial(dir, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	defer running.Close()
	dead, err := createPartial(dir, "beta")
	if err != nil {
		t.Fatal(err)
	}
	dead.Close()
	kept := filepath.Join(dir, "alpha-20260101-000000"+archive.Ext)
	if err := os.WriteFile(kept, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	removed, err := RemoveLeftovers(dir)
	if err != nil || len(removed) != 1 || removed[0] != filepath.Base(dead.Name()) {
		t.Errorf("removed %q, %v", removed, err)
	}
	for _, f := range []string{running.Name(), kept} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s was removed", f)
		}
	}
}

// A restore checks the content it streams against the archive's hashes
// (archive's TestHashCatchesChangedContent), and what the box wrote once
// it runs: a file the engine lost or cut short fails it.
func TestRestoreChecksTheRestoredData(t *testing.T) {
	r, id := keys(t)
	file := filepath.Join(t.TempDir(), "a"+archive.Ext)
	if _, err := (Save{Box: "alpha", Agent: engine.Container{ID: "a"}, Out: file, Recipients: r, Identity: id}).Run(context.Background(), &fakeBox{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		listed func([]string) []string
		want   string
	}{
		{"lost", func(l []string) []string {
			return slices.DeleteFunc(l, func(e string) bool { return strings.Contains(e, "notes.txt") })
		}, "1 missing (data/home/agent/notes.txt)"},
		{"cut short", func(l []string) []string {
			for i, e := range l {
				l[i] = strings.Replace(e, "f 6 /data/home/agent/notes.txt", "f 2 /data/home/agent/notes.txt", 1)
			}
			return l
		}, "1 of another size (data/home/agent/notes.txt)"},
	} {
		e := &fakeBox{listed: tc.listed}
		contents, err := restoreData(context.Background(), e, "b", file, []age.Identity{id}, 0)
		if err != nil {
			t.Fatal(err)
		}
		err = checkRestored(context.Background(), e, "b", contents)
		if !errors.Is(err, archive.ErrRestoreMismatch) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v", tc.name, err)
		}
	}
	// A bound below the data's size stops the restore.
	if err := Restore(context.Background(), &fakeBox{}, "b", file, []age.Identity{id}, 3); !errors.Is(err, archive.ErrTooBig) {
		t.Errorf("bounded: %v", err)
	}
}

// Thaw undoes a dead save's freeze once, and leaves a running save's alone.
func TestThaw(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "boxes.yaml")
	e := &fakeBox{}
	held, err := statedir.Beside(cfg).Freezes().Hold(statedir.Freeze{Box: "alpha", Container: "old"})
	if err != nil {
		t.Fatal(err)
	}
	if err := Thaw(context.Background(), cfg, e, "alpha"); err != nil || len(e.hbCalls) != 0 {
		t.Errorf("thawed a running save's box: %q %v", e.hbCalls, err)
	}
	held.Keep()
	if err := Thaw(context.Background(), cfg, e, "alpha"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.hbCalls, "|"); got != "unpause|resume" {
		t.Errorf("calls %q", got)
	}
	if err := Thaw(context.Background(), cfg, e, "alpha"); err != nil || len(e.hbCalls) != 2 {
		t.Errorf("thawed twice: %q %v", e.hbCalls, err)
	}
}

// A restore that would not leave the reserve free is refused before it
// starts, the room measured by Prepare with the box's image.
func TestSeedChecksFreeSpace(t *testing.T) {
	e := &fakeBox{free: Reserve + 100}
	s := &Seeder{Hosts: oneHost{e}, Sizes: map[string]int64{"a": 200}}
	s.Prepare(context.Background(), "", "alpha", "a", "sha256:img")
	err := s.Seed(context.Background(), "", "alpha", "a")
	if !errors.Is(err, archive.ErrNoRoom) || len(e.copied) != 0 {
		t.Errorf("got %v, copied %q", err, e.copied)
	}
	if want := "not enough free space for the restore on the local engine: the archive's data takes 200 B, 256.0 MiB are free, and 256.0 MiB must stay free; nothing was restored"; err == nil || err.Error() != want {
		t.Errorf("error %v\nwant  %s", err, want)
	}
	if !slices.Equal(e.measures, []string{"sha256:img alpha"}) {
		t.Errorf("measures %q", e.measures)
	}
}

// The restores onto one host share one measure of its room, each taking
// its data from what the others left: two that fit alone but not together
// are not both let in.
func TestSeedsShareTheRoomOfAHost(t *testing.T) {
	e := &fakeBox{free: Reserve + 300}
	s := &Seeder{Hosts: oneHost{e}, Sizes: map[string]int64{"a": 200, "b": 200}}
	s.Prepare(context.Background(), "", "alpha", "a", "img")
	s.Prepare(context.Background(), "", "beta", "b", "img")
	if err := s.take(context.Background(), "", 200); err != nil {
		t.Fatal(err)
	}
	err := s.take(context.Background(), "", 200)
	if !errors.Is(err, archive.ErrNoRoom) || !strings.Contains(err.Error(), "256.0 MiB are free (besides the 200 B this command's other restores there take)") {
		t.Errorf("second restore: %v", err)
	}
	if len(e.measures) != 1 {
		t.Errorf("measured %d times: %q", len(e.measures), e.measures)
	}
}

// A Seed whose room nobody measured is refused, not let in unchecked; an
// archive with no data to bound needs no measure.
func TestSeedWithoutPrepareIsRefused(t *testing.T) {
	e := &fakeBox{}
	s := &Seeder{Hosts: oneHost{e}, Sizes: map[string]int64{"a": 200}}
	err := s.Seed(context.Background(), "", "alpha", "a")
	if err == nil || !strings.Contains(err.Error(), "nothing measured it on the local engine before the create") || len(e.copied) != 0 {
		t.Errorf("got %v, copied %q", err, e.copied)
	}
	s.Prepare(context.Background(), "", "alpha", "other", "img")
	if len(e.measures) != 0 {
		t.Errorf("measured for an archive with no bound: %q", e.measures)
	}
}

// Seed restores; Finish checks what the box wrote, and resumes the box
// only once that passed.
func TestSeedChecksTheRestoredDataBeforeFinishResumes(t *testing.T) {
	r, id := keys(t)
	file := filepath.Join(t.TempDir(), "a"+archive.Ext)
	if _, err := (Save{Box: "alpha", Agent: engine.Container{ID: "a"}, Out: file, Recipients: r, Identity: id}).Run(context.Background(), &fakeBox{}); err != nil {
		t.Fatal(err)
	}
	for _, good := range []bool{true, false} {
		e := &fakeBox{}
		if !good {
			e.listed = func(l []string) []string {
				return slices.DeleteFunc(l, func(e string) bool { return strings.Contains(e, "notes.txt") })
			}
		}
		var mu sync.Mutex
		var steps []string
		s := &Seeder{
			Hosts:      oneHost{e},
			Identities: []age.Identity{id},
			Init:       hb.Wait{Timeout: 5 * time.Second},
			Step: func(box, msg string) {
				mu.Lock()
				steps = append(steps, msg)
				mu.Unlock()
			},
		}
		if err := s.Seed(context.Background(), "", "beta", file); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(e.hbCalls, "find") {
			t.Errorf("Seed listed the box before it runs: %q", e.hbCalls)
		}
		err := s.Finish(context.Background(), "", "beta")
		resumed := slices.Contains(e.hbCalls, "resume")
		if good {
			if err != nil || !resumed || !slices.Contains(steps, "restored /data checked against the archive") {
				t.Errorf("good restore: %v; resumed %v; steps %q", err, resumed, steps)
			}
			continue
		}
		if !errors.Is(err, archive.ErrRestoreMismatch) || !strings.Contains(err.Error(), "restoring from "+file) {
			t.Errorf("bad restore: Finish returned %v", err)
		}
		if resumed {
			t.Errorf("bad restore: the box was resumed: %q", e.hbCalls)
		}
	}
}

// saveCalls are a save's calls into the box joined in order, but for the
// measure of /data and hb quiesce, which run side by side and so land in
// either order: they are given quiesce first.
func saveCalls(calls []string) string {
	// du runs beside the others from the start: its place among them is
	// the scheduler's, and only that it comes before the pause is checked.
	return strings.Join(sideorder.Before(calls, "du -sbx /data", "pause"), "|")
}

// asTyped names a path as it is.
func asTyped(path string) string { return path }
