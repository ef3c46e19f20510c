package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/internal/sideorder"
)

// fakeEngine notes what a snapshot or a revert asks of the engine, in
// order; helper, when set, answers the helpers.
type fakeEngine struct {
	engine.Inside
	mu     sync.Mutex
	calls  []string
	labels map[string]string
	helper func(ctx context.Context, h engine.Helper) ([]byte, error)
}

func (f *fakeEngine) note(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeEngine) Run(_ context.Context, _, _ string, cmd []string, stdout, _ io.Writer) (int, error) {
	f.note("exec %s", strings.Join(cmd, " "))
	if cmd[0] == "du" {
		_, _ = io.WriteString(stdout, "4096\t/data\n")
	}
	return 0, nil
}
func (f *fakeEngine) Capabilities() engine.Capabilities {
	return engine.Capabilities{Freeze: true, Rename: true}
}
func (f *fakeEngine) Pause(context.Context, string) error   { f.note("pause"); return nil }
func (f *fakeEngine) Unpause(context.Context, string) error { f.note("unpause"); return nil }
func (f *fakeEngine) RemoveVolume(_ context.Context, name string) error {
	f.note("remove %s", name)
	return nil
}
func (f *fakeEngine) RunHelper(ctx context.Context, h engine.Helper) ([]byte, error) {
	var mounts []string
	for _, m := range h.Mounts {
		if m.Labels != nil {
			f.note("create %s", m.Volume)
			f.labels = m.Labels
		}
		mode := "rw"
		if m.ReadOnly {
			mode = "ro"
		}
		mounts = append(mounts, m.Volume+":"+m.Target+":"+mode)
	}
	what := h.Cmd[0]
	if what == "sh" {
		what = strings.TrimSpace("sh " + strings.Join(h.Cmd[min(4, len(h.Cmd)):], " "))
	}
	f.note("helper %s %s [%s] %s snapshot=%q", h.Box, h.Image, strings.Join(mounts, " "), what, h.Snapshot)
	if f.helper != nil {
		return f.helper(ctx, h)
	}
	if h.Cmd[0] == "du" {
		return []byte("8192\t/from\n"), nil
	}
	return nil, nil
}

// calls are f's calls with quiesce before the du that runs beside it.
func (f *fakeEngine) ordered() string {
	return strings.Join(sideorder.Before(f.calls, "exec du -sbx /data", "pause"), "\n")
}

var made = time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)

func take(state string) Take {
	return Take{Box: "alpha", Label: "before", Fleet: "team", Agent: engine.Container{ID: "a1", State: engine.State(state), Image: "sha256:img"},
		Image: "sha256:img", Init: hb.Wait{Timeout: time.Second}, Now: func() time.Time { return made }}
}

// A running box is paused while its /data is copied into the new,
// labelled volume (measured just before), then unpaused.
func TestTakeQuiescesARunningBox(t *testing.T) {
	e := &fakeEngine{}
	s, err := take("running").Run(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"exec " + hb.Path + " health agent",
		"exec du -sbx /data",
		"pause",
		"create hbl-alpha_snap-before",
		`helper alpha sha256:img [hbl-alpha_agent-data:/from:ro hbl-alpha_snap-before:/to:rw] sh true snapshot="before"`,
		"unpause",
	}, "\n")
	if got := e.ordered(); got != want {
		t.Errorf("calls:\n%s\nwant:\n%s", got, want)
	}
	wantLabels := map[string]string{"hermes-box-lite": "1", "boxes.box": "alpha", "boxes.fleet": "team", "boxes.snapshot": "before",
		"boxes.snapshot.created": "2026-01-02T15:04:05Z", "boxes.snapshot.size": "4096"}
	if !reflect.DeepEqual(e.labels, wantLabels) {
		t.Errorf("labels %v, want %v", e.labels, wantLabels)
	}
	if s.Volume != "hbl-alpha_snap-before" || s.Size != 4096 || !s.Created.Equal(made) || s.Label != "before" {
		t.Errorf("snapshot %+v", s)
	}
}

// A stopped box needs no quiesce: a helper measures its volume.
func TestTakeCopiesAStoppedBoxAsItIs(t *testing.T) {
	e := &fakeEngine{}
	s, err := take("exited").Run(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		`helper alpha sha256:img [hbl-alpha_agent-data:/from:ro] du snapshot=""`,
		"create hbl-alpha_snap-before",
		`helper alpha sha256:img [hbl-alpha_agent-data:/from:ro hbl-alpha_snap-before:/to:rw] sh false snapshot="before"`,
	}, "\n")
	if got := e.ordered(); got != want {
		t.Errorf("calls:\n%s\nwant:\n%s", got, want)
	}
	if s.Size != 8192 {
		t.Errorf("size %d", s.Size)
	}
}

// A copy that fails, or is cut short by Ctrl-C, leaves no snapshot and
// the box resumed.
func TestTakeFailedOrCancelledLeavesNoSnapshot(t *testing.T) {
	for _, cancelled := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		e := &fakeEngine{helper: func(ctx context.Context, h engine.Helper) ([]byte, error) {
			if cancelled {
				cancel()
				return nil, ctx.Err()
			}
			return nil, &engine.ExitError{Code: 1, Stderr: "cp: No space left on device"}
		}}
		_, err := take("running").Run(ctx, e)
		cancel()
		switch {
		case cancelled && !errors.Is(err, context.Canceled):
			t.Errorf("cancelled: %v", err)
		case !cancelled && (err == nil || err.Error() != "copying alpha's /data: the helper container exited 1: cp: No space left on device"):
			t.Errorf("failed: %v", err)
		}
		got := e.ordered()
		if !strings.HasSuffix(got, "snapshot=\"before\"\nremove hbl-alpha_snap-before\nunpause") {
			t.Errorf("cancelled %v: calls:\n%s", cancelled, got)
		}
	}
}

func TestCheckLabel(t *testing.T) {
	for _, ok := range []string{"a", "0", "before-upgrade", "v1.2_rc-3", "20260102-150405", strings.Repeat("x", 63)} {
		if err := CheckLabel(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-a", ".a", "_a", "Before", "a b", "a/b", "../x", "é", strings.Repeat("x", 64)} {
		if err := CheckLabel(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if got := DefaultLabel(time.Date(2026, 1, 2, 16, 4, 5, 0, time.FixedZone("CET", 3600))); got != "20260102-150405" {
		t.Errorf("default label %q, want the UTC time", got)
	}
}

// A revert copies the snapshot read-only into the box's volume; a
// snapshot without its data/ is refused as incomplete.
func TestRevertRunsOneHelper(t *testing.T) {
	e := &fakeEngine{}
	r := Revert{Box: "alpha", Snapshot: engine.Snapshot{Volume: "hbl-alpha_snap-before", Label: "before"}, Image: "sha256:img"}
	if err := r.Run(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	if got := e.ordered(); got != `helper alpha sha256:img [hbl-alpha_snap-before:/from:ro hbl-alpha_agent-data:/to:rw] sh /from/data false boxes revert snapshot=""` {
		t.Errorf("calls %s", got)
	}
	e.helper = func(context.Context, engine.Helper) ([]byte, error) {
		return nil, &engine.ExitError{Code: incompleteExit}
	}
	if err := r.Run(context.Background(), e); !errors.Is(err, ErrIncomplete) {
		t.Errorf("incomplete snapshot: %v", err)
	}
}

// entry is one file of a tree as a copy must keep it.
type entry struct {
	Mode    fs.FileMode
	ModTime time.Time
	Content string // a file's bytes, a link's target
}

func tree(t *testing.T, dir string) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		e := entry{Mode: info.Mode()}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			e.Content, err = os.Readlink(p)
		case info.Mode().IsRegular():
			var b []byte
			b, err = os.ReadFile(p)
			e.Content, e.ModTime = string(b), info.ModTime()
		case rel != ".":
			e.ModTime = info.ModTime()
		}
		out[rel] = e
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diff names what differs between two trees.
func diff(got, want map[string]entry) []string {
	var out []string
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			out = append(out, fmt.Sprintf("%s: %+v, want %+v", k, g, w))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			out = append(out, k+": not wanted")
		}
	}
	sort.Strings(out)
	return out
}

func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	old := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "->"); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
}

// runScript runs script with /from and /to standing for from and to, as
// the helper container would.
func runScript(t *testing.T, script, from, to string, args ...string) error {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the scripts are for the image's GNU cp and find")
	}
	s := strings.NewReplacer("/from", from, "/to", to).Replace(script)
	out, err := exec.Command("sh", append([]string{"-c", s, "sh"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}

// The copy lands whole under data/, quiesce marker dropped when the box
// was quiesced for it; the revert empties the box's /data, dotfiles and
// hb's directory included, and copies data/ in exactly, modes, times and
// links kept, leaving no marker of its own.
func TestScriptsCopyExactly(t *testing.T) {
	box, snap, reverted := t.TempDir(), t.TempDir(), t.TempDir()
	write(t, box, map[string]string{
		"home/agent/notes.txt": "hello\n",
		"home/agent/.secret":   "s3cret",
		"home/agent/link":      "->notes.txt",
		".hb/quiesced":         "2026-01-02T15:04:05Z\n",
		".hb/health":           "ok",
	})
	if err := os.Chmod(filepath.Join(box, "home/agent"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := runScript(t, copyScript, box, snap, "true"); err != nil {
		t.Fatal(err)
	}
	want := tree(t, box)
	delete(want, ".hb/quiesced")
	if d := diff(tree(t, filepath.Join(snap, dataDir)), want); d != nil {
		t.Errorf("snapshot: %q", d)
	}
	if _, err := os.Stat(filepath.Join(snap, partialDir)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the partial copy is left: %v", err)
	}

	write(t, reverted, map[string]string{"new.txt": "later", ".dotfile": "x", ".hb/other": "y", "home/agent/notes.txt": "changed"})
	if err := runScript(t, replaceScript, snap, reverted, filepath.Join(snap, dataDir), "false", "boxes revert"); err != nil {
		t.Fatal(err)
	}
	if d := diff(tree(t, reverted), want); d != nil {
		t.Errorf("reverted: %q", d)
	}

	// A snapshot cut short (no data/) is refused before anything is written.
	cut := t.TempDir()
	err := runScript(t, replaceScript, cut, reverted, filepath.Join(cut, dataDir), "false", "boxes revert")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != incompleteExit {
		t.Errorf("revert from an incomplete snapshot: %v", err)
	}
	if d := diff(tree(t, reverted), want); d != nil {
		t.Errorf("an incomplete snapshot changed /data: %q", d)
	}
}

// A stopped box's marker (a revert or a restore cut short) is its data,
// kept by the snapshot and by a revert to it; a snapshot with no hb
// directory leaves none behind.
func TestScriptsKeepAMarkerThatIsData(t *testing.T) {
	for _, files := range []map[string]string{
		{"home/agent/a": "a", ".hb/quiesced": "2026-01-02T15:04:05Z boxes revert\n"},
		{"home/agent/a": "a"},
	} {
		box, snap, reverted := t.TempDir(), t.TempDir(), t.TempDir()
		write(t, box, files)
		if err := runScript(t, copyScript, box, snap, "false"); err != nil {
			t.Fatal(err)
		}
		write(t, reverted, map[string]string{".hb/health": "ok", "b": "b"})
		if err := runScript(t, replaceScript, snap, reverted, filepath.Join(snap, dataDir), "false", "boxes revert"); err != nil {
			t.Fatal(err)
		}
		if d := diff(tree(t, reverted), tree(t, box)); d != nil {
			t.Errorf("%v: reverted: %q", names(files), d)
		}
	}
}

func names(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// A fork copies a box's /data as it is into a new box's: the quiesce
// marker of a source quiesced for the copy is dropped, a stopped source's
// is its data and kept; a fork of a snapshot copies its data/ as a revert
// does. The marker the copy writes first stays when the copy is cut short.
func TestForkScript(t *testing.T) {
	files := map[string]string{"home/agent/notes.txt": "hello\n", "home/agent/link": "->notes.txt", ".hb/quiesced": "2026-01-02T15:04:05Z boxes snapshot\n", ".hb/health": "ok"}
	for _, quiesced := range []bool{true, false} {
		box, forked := t.TempDir(), t.TempDir()
		write(t, box, files)
		if err := runScript(t, replaceScript, box, forked, box, strconv.FormatBool(quiesced), "boxes fork"); err != nil {
			t.Fatal(err)
		}
		want := tree(t, box)
		if quiesced {
			delete(want, ".hb/quiesced")
		}
		if d := diff(tree(t, forked), want); d != nil {
			t.Errorf("quiesced %v: forked: %q", quiesced, d)
		}
	}

	// Cut short: the copy fails half-way (here, a cp that copies one file
	// and dies), and the marker written first is left.
	box, forked := t.TempDir(), t.TempDir()
	write(t, box, map[string]string{"a": "a", "b": "b"})
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "cp"), []byte("#!/bin/sh\necho a > "+forked+"/a\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	if err := runScript(t, replaceScript, box, forked, box, "false", "boxes fork"); err == nil {
		t.Fatal("a fork whose cp failed succeeded")
	}
	b, err := os.ReadFile(filepath.Join(forked, ".hb/quiesced"))
	if err != nil || !strings.HasSuffix(string(b), " boxes fork\n") {
		t.Errorf("marker after a fork cut short: %q, %v", b, err)
	}
}

// Fork runs one helper: the source read-only, the new box's volume
// written, a snapshot's data/ or a box's whole volume.
func TestForkRunsOneHelper(t *testing.T) {
	for _, tc := range []struct {
		f    Fork
		args string
	}{
		{Fork{Box: "trial", Source: "hbl-base_snap-clean", Snapshot: true, Image: "sha256:img"}, "/from/data false boxes fork"},
		{Fork{Box: "trial", Source: "hbl-base_agent-data", Quiesced: true, Image: "sha256:img"}, "/from true boxes fork"},
	} {
		e := &fakeEngine{}
		if err := tc.f.Run(context.Background(), e); err != nil {
			t.Fatal(err)
		}
		if got, want := e.ordered(), "helper trial sha256:img ["+tc.f.Source+":/from:ro hbl-trial_agent-data:/to:rw] sh "+tc.args+" snapshot=\"\""; got != want {
			t.Errorf("calls %s, want %s", got, want)
		}
	}
}
