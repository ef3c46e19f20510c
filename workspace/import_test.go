package workspace_test

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/toolstate"
	"github.com/hermes-box/boxes/workspace"
)

// importEngine is volumeEngine that also answers an import's helpers: the
// probe prints probe; the copy and the helpers that put it in place or
// undo it are noted, and fail as fail says, by step (probe, copy, place,
// undo).
type importEngine struct {
	volumeEngine
	probe string
	fail  map[string]error
	// during, when set, runs as the copy does.
	during func()
}

func (e importEngine) RunHelper(ctx context.Context, h engine.Helper) ([]byte, error) {
	switch len(h.Cmd) {
	case 7: // sh -c SCRIPT sh HOME USER DIR
		e.log.note("probe %s as %s, %s read-only=%v", h.Cmd[6], h.Cmd[5], h.Mounts[0].Volume+":"+h.Mounts[0].Target, h.Mounts[0].ReadOnly)
		return []byte(e.probe), e.fail["probe"]
	case 8: // sh -c SCRIPT sh HOME DIR COPY DO
		e.log.note("%s %s from %s", h.Cmd[7], h.Cmd[5], staged(h.Cmd[6]))
		return nil, e.fail[h.Cmd[7]]
	}
	return e.volumeEngine.RunHelper(ctx, h)
}

func (e importEngine) CopyTo(_ context.Context, id, dir string, content io.Reader) error {
	if e.during != nil {
		e.during()
	}
	if err := e.fail["copy"]; err != nil {
		return err
	}
	var names []string
	tr := tar.NewReader(content)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		names = append(names, fmt.Sprintf("%s %d:%d %o", staged(h.Name), h.Uid, h.Gid, h.Mode))
	}
	e.log.note("copy into %s of %s: %s", dir, id, strings.Join(names, ", "))
	return nil
}

// staged is name with an import's random copy name made COPY.
func staged(name string) string {
	return regexp.MustCompile(`\.boxes-import-[0-9a-f]{12}`).ReplaceAllString(name, ".COPY")
}

// importFleet is team-b's alpha on the local engine as o says, whose
// import probe prints probe.
func importFleet(t *testing.T, o *engine.Observed, probe string, fail map[string]error, during func()) (*changes, *workspace.Workspace) {
	t.Helper()
	f := fleetB(t, "\n  alpha: {}", o)
	log := &changes{}
	ws := f.openWith(t, func(_ string, e *fakeEngine) engine.Engine {
		return importEngine{volumeEngine: volumeEngine{fakeEngine: e, log: log}, probe: probe, fail: fail, during: during}
	})
	if err := ws.Tokens.Put("alpha", "t0ken"); err != nil {
		t.Fatal(err)
	}
	return log, ws
}

// hermesTree is a checked tree of two files in a directory.
func hermesTree(t *testing.T) *toolstate.Tree {
	t.Helper()
	dir := filepath.Join(t.TempDir(), ".hermes")
	if err := os.MkdirAll(filepath.Join(dir, "sessions"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"config.yaml": 0o644, "sessions/s1.json": 0o600} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), mode); err != nil {
			t.Fatal(err)
		}
	}
	tree, err := toolstate.Check(dir, "~/.hermes", toolstate.DefaultMaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

func hermes(t *testing.T) toolstate.Tool {
	tool, err := toolstate.Named("hermes")
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

var importWait = hb.Wait{Timeout: time.Second}

func importNow() time.Time { return madeAt }

// An import into a running box that holds state: the box is stopped, its
// /data kept in a snapshot, the tree copied beside the tool's place owned
// by the agent's IDs the box's image has, put in place, and the box
// started again.
func TestImportReplacesARunningBoxsState(t *testing.T) {
	log, ws := importFleet(t, alphaWith("running"), "1001 1002 directory\n3 120\n", nil, nil)
	im, err := ws.LockedImport(context.Background(), "alpha", hermes(t), importWait, importNow)
	if err != nil {
		t.Fatal(err)
	}
	if im.UID != 1001 || im.GID != 1002 || im.Held != (workspace.Held{Kind: "directory", Entries: 3, Bytes: 120}) || !im.Running ||
		im.Snapshot != "before-import-hermes-20260102-150405" || im.Path != "/data/home/agent/.hermes" {
		t.Errorf("importing %+v", im)
	}
	tree := hermesTree(t)
	var b strings.Builder
	im.WriteText(&b, tree)
	if want := "Hermes's state from ~/.hermes (2 files, 1 directory, 27 B) goes to box alpha's /data/home/agent/.hermes, owned by agent (1001:1002), modes and times kept\n" +
		"box alpha's /data/home/agent/.hermes holds 3 entries (120 B of files) now: it is replaced; snapshot before-import-hermes-20260102-150405 keeps the box's /data as it was (boxes revert alpha before-import-hermes-20260102-150405 puts it back)\n" +
		"box alpha is stopped for it, then started again; it keeps its token\n"; b.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", b.String(), want)
	}
	if got := log.String(); got != "exec health agent\nprobe .hermes as agent, hbl-alpha_agent-data:/data read-only=true" {
		t.Errorf("before the import, calls:\n%s", got)
	}
	var steps []string
	res, err := ws.Import(context.Background(), im, tree, workspace.ImportOptions{Apply: workspace.ApplyOptions{Parallelism: 1}, Now: importNow,
		Step: func(msg string) { steps = append(steps, msg) }})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"exec health agent", "probe .hermes as agent, hbl-alpha_agent-data:/data read-only=true",
		"stop hbl-alpha",
		"helper du hbl-alpha_agent-data:/from",
		"create hbl-alpha_snap-before-import-hermes-20260102-150405",
		"helper sh hbl-alpha_agent-data:/from hbl-alpha_snap-before-import-hermes-20260102-150405:/to",
		"copy into /data/home/agent of c-alpha: .hermes.COPY/ 1001:1002 700, .hermes.COPY/config.yaml 1001:1002 644, .hermes.COPY/sessions/ 1001:1002 700, .hermes.COPY/sessions/s1.json 1001:1002 600",
		"place .hermes from .hermes.COPY",
		"start hbl-alpha",
	}, "\n")
	if got := log.String(); got != want {
		t.Errorf("calls:\n%s\nwant:\n%s", got, want)
	}
	if strings.Join(steps, "\n") != "snapshot before-import-hermes-20260102-150405: measuring /data\nsnapshot before-import-hermes-20260102-150405: copying /data\ncopying ~/.hermes (27 B)\nputting it in place" {
		t.Errorf("steps:\n%s", strings.Join(steps, "\n"))
	}
	if res.State != "running" || res.Snapshot != im.Snapshot || res.Files != 2 || res.Dirs != 1 || res.Bytes != 27 || res.UID != 1001 || res.From != tree.Path || !res.Replaced.Replaced() {
		t.Errorf("result %+v", res)
	}
	b.Reset()
	res.WriteText(&b)
	if want := "imported Hermes's state into alpha's /data/home/agent/.hermes: 2 files, 1 directory, 27 B; it is running\n" +
		"what it replaced is in snapshot before-import-hermes-20260102-150405: boxes revert alpha before-import-hermes-20260102-150405 puts the box's /data back as it was\n"; b.String() != want {
		t.Errorf("result text:\n%s\nwant:\n%s", b.String(), want)
	}
	if token, _, err := ws.Tokens.Get("alpha"); err != nil || token != "t0ken" {
		t.Errorf("token %q, %v", token, err)
	}
}

// Nothing there, or the empty directory hb init lays out, is replaced
// without a snapshot; a stopped box is neither stopped nor started.
func TestImportWithNothingToReplace(t *testing.T) {
	for _, c := range []struct {
		state, probe, text string
		held               workspace.Held
	}{
		{"running", "1000 1000 none\n", "box alpha has no /data/home/agent/.hermes yet\n", workspace.Held{}},
		{"exited", "1000 1000 directory\n0 0\n", "box alpha's /data/home/agent/.hermes is empty\n", workspace.Held{Kind: "directory"}},
	} {
		log, ws := importFleet(t, alphaWith(c.state), c.probe, nil, nil)
		im, err := ws.LockedImport(context.Background(), "alpha", hermes(t), importWait, importNow)
		if err != nil {
			t.Fatal(err)
		}
		if im.Snapshot != "" || im.Held != c.held || im.Held.Replaced() {
			t.Errorf("%s: importing %+v", c.state, im)
		}
		var b strings.Builder
		im.WriteText(&b, hermesTree(t))
		if !strings.Contains(b.String(), "\n"+c.text) {
			t.Errorf("%s: text:\n%s", c.state, b.String())
		}
		res, err := ws.Import(context.Background(), im, hermesTree(t), workspace.ImportOptions{Apply: workspace.ApplyOptions{Parallelism: 1}})
		if err != nil {
			t.Fatal(err)
		}
		got := log.String()
		if strings.Contains(got, "snap") || !strings.Contains(got, "\nplace .hermes from .hermes.COPY") {
			t.Errorf("%s: calls:\n%s", c.state, got)
		}
		if running := c.state == "running"; strings.Contains(got, "stop hbl-alpha") != running || strings.Contains(got, "start hbl-alpha") != running ||
			(res.State == "running") != running {
			t.Errorf("%s: calls:\n%s\nresult %+v", c.state, got, res)
		}
	}
}

// Every refusal comes before anything is changed: a box without a home
// yet, a paused box, an unknown box, another fleet's box, a probe that
// fails or prints nonsense.
func TestImportRefusals(t *testing.T) {
	for _, c := range []struct {
		name  string
		o     *engine.Observed
		probe string
		fail  map[string]error
		box   string
		want  string
		is    any
	}{
		{"no home", alphaWith("exited"), "nohome\n", nil, "alpha",
			"box alpha has no home for agent in its /data yet (/data/home/agent): its hb init has not run; nothing was changed", new(*workspace.NoHomeError)},
		{"paused", alphaWith("paused"), "", nil, "alpha", "box alpha: the agent container is paused", new(*workspace.NotRunningError)},
		{"unknown box", alphaWith("running"), "", nil, "nope", `no box "nope" in`, new(*workspace.UndeclaredError)},
		{"another fleet's box", fleetBox("alpha", "team-a"), "", nil, "alpha", "box alpha on the local engine is fleet team-a's, not fleet team-b's; nothing was changed", new(*workspace.OtherFleetError)},
		{"probe fails", alphaWith("running"), "", map[string]error{"probe": &engine.ExitError{Code: 1, Stderr: "id: 'agent': no such user"}}, "alpha",
			"reading what box alpha holds at /data/home/agent/.hermes: the helper container exited 1: id: 'agent': no such user; nothing was changed", new(*engine.ExitError)},
		{"probe prints nonsense", alphaWith("running"), "1000 x directory\n", nil, "alpha",
			`reading what box alpha holds at /data/home/agent/.hermes: the helper printed "1000 x directory\n"; nothing was changed`, nil},
	} {
		log, ws := importFleet(t, c.o, c.probe, c.fail, nil)
		_, err := ws.LockedImport(context.Background(), c.box, hermes(t), importWait, importNow)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || (c.is != nil && !errors.As(err, c.is)) {
			t.Errorf("%s: %v\nwant %s", c.name, err, c.want)
		}
		if got := log.String(); strings.Contains(got, "stop") || strings.Contains(got, "copy") || strings.Contains(got, "place") || strings.Contains(got, "helper") {
			t.Errorf("%s: changed:\n%s", c.name, got)
		}
	}
}

// A failure once the box is stopped removes the copy and leaves the
// box's state as it was, the box started again unless interrupted; the
// snapshot made for it stays. A copy that cannot be removed leaves the box
// stopped, and says so.
func TestImportFailures(t *testing.T) {
	full := &engine.ExitError{Code: 1, Stderr: "No space left on device"}
	for _, c := range []struct {
		name   string
		fail   map[string]error
		cancel bool
		want   string
		tail   string
		hint   string
	}{
		{"copy fails", map[string]error{"copy": errors.New("copying into the container: no space left on device")},
			false, "importing Hermes's state into box alpha failed: copying ~/.hermes into the box: copying into the container: no space left on device; the box's state is as it was, and it runs again; snapshot before-import-hermes-20260102-150405, made for it, is kept",
			"\nundo .hermes from .hermes.COPY\nstart hbl-alpha", ""},
		{"place fails", map[string]error{"place": full},
			false, "importing Hermes's state into box alpha failed: putting the copy in place: the helper container exited 1: No space left on device; the box's state is as it was, and it runs again",
			"\nplace .hermes from .hermes.COPY\nundo .hermes from .hermes.COPY\nstart hbl-alpha", ""},
		{"undo fails too", map[string]error{"place": full, "undo": errors.New("the engine is gone")},
			false, "importing Hermes's state into box alpha failed: putting the copy in place: the helper container exited 1: No space left on device; the box is stopped, its state as it was, and removing the partial copy (/data/home/agent/.hermes.boxes-import-",
			"\nplace .hermes from .hermes.COPY\nundo .hermes from .hermes.COPY", "run the import again (it removes the partial copy), then boxes start alpha"},
		{"interrupted", map[string]error{"copy": context.Canceled},
			true, "importing Hermes's state into box alpha failed: copying ~/.hermes into the box: context canceled; the box's state is as it was, and the box is stopped",
			"\nundo .hermes from .hermes.COPY", "boxes start alpha"},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		during := func() {
			if c.cancel {
				cancel()
			}
		}
		log, ws := importFleet(t, alphaWith("running"), "1000 1000 file\n", c.fail, during)
		im, err := ws.LockedImport(ctx, "alpha", hermes(t), importWait, importNow)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ws.Import(ctx, im, hermesTree(t), workspace.ImportOptions{Apply: workspace.ApplyOptions{Parallelism: 1}, Now: importNow})
		cancel()
		var ie *workspace.ImportError
		if !errors.As(err, &ie) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant %s", c.name, err, c.want)
		}
		if h := strings.Join(hint.Lines(err), "\n"); h != c.hint {
			t.Errorf("%s: hint %q, want %q", c.name, h, c.hint)
		}
		if got := log.String(); !strings.HasSuffix(got, c.tail) || strings.Contains(got, "remove hbl-alpha_snap") {
			t.Errorf("%s: calls:\n%s", c.name, got)
		}
	}
}

// A tree changed on this machine since its check fails the copy with its
// own words, not the engine's, and changes nothing.
func TestImportOfAChangedTree(t *testing.T) {
	log, ws := importFleet(t, alphaWith("exited"), "1000 1000 none\n", nil, nil)
	im, err := ws.LockedImport(context.Background(), "alpha", hermes(t), importWait, importNow)
	if err != nil {
		t.Fatal(err)
	}
	tree := hermesTree(t)
	if err := os.WriteFile(filepath.Join(tree.Path, "config.yaml"), []byte("rewritten meanwhile"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ws.Import(context.Background(), im, tree, workspace.ImportOptions{Apply: workspace.ApplyOptions{Parallelism: 1}})
	var ch *toolstate.ChangedError
	if !errors.As(err, &ch) || !strings.Contains(err.Error(), "failed: ~/.hermes/config.yaml changed while it was imported: its size went from 11 to 19 bytes; the box's state is as it was") {
		t.Errorf("%v", err)
	}
	if got := log.String(); !strings.HasSuffix(got, "probe .hermes as agent, hbl-alpha_agent-data:/data read-only=true\nundo .hermes from .hermes.COPY") {
		t.Errorf("calls:\n%s", got)
	}
}
