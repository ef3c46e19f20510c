package workspace_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/internal/sideorder"
	"github.com/hermes-box/boxes/statedir"
	"github.com/hermes-box/boxes/workspace"
)

// volumeEngine is a fake engine for snapshots and reverts: it notes every
// call that changes something (a pause, an exec, a volume, a helper, a
// stop or a start); helper, when set, answers the helpers.
type volumeEngine struct {
	*fakeEngine
	log    *changes
	helper func(h engine.Helper) error
}

type changes struct {
	mu    sync.Mutex
	calls []string
}

func (c *changes) note(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, fmt.Sprintf(format, args...))
}

// String is the calls, one a line, with the du that runs beside the
// others from the start just before the pause.
func (c *changes) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(sideorder.Before(c.calls, "exec du -sbx /data", "pause"), "\n")
}

func (e volumeEngine) Run(_ context.Context, _, _ string, cmd []string, stdout, _ io.Writer) (int, error) {
	e.log.note("exec %s", strings.TrimPrefix(strings.Join(cmd, " "), hb.Path+" "))
	if cmd[0] == "du" {
		_, _ = io.WriteString(stdout, "4096\t/data\n")
	}
	return 0, nil
}
func (e volumeEngine) ContainerID(_ context.Context, box, service string) (string, error) {
	return "c-" + box, nil
}
func (e volumeEngine) Pause(context.Context, string) error   { e.log.note("pause"); return nil }
func (e volumeEngine) Unpause(context.Context, string) error { e.log.note("unpause"); return nil }
func (e volumeEngine) RemoveVolume(_ context.Context, name string) error {
	e.log.note("remove %s", name)
	return nil
}
func (e volumeEngine) RunHelper(_ context.Context, h engine.Helper) ([]byte, error) {
	var mounts []string
	for _, m := range h.Mounts {
		if m.Labels != nil {
			e.log.note("create %s", m.Volume)
		}
		mounts = append(mounts, m.Volume+":"+m.Target)
	}
	e.log.note("helper %s %s", h.Cmd[0], strings.Join(mounts, " "))
	if e.helper != nil {
		if err := e.helper(h); err != nil {
			return nil, err
		}
	}
	if h.Cmd[0] == "du" {
		return []byte("8192 /from\n"), nil
	}
	return nil, nil
}
func (e volumeEngine) Stop(_ context.Context, project string) error {
	e.log.note("stop %s", project)
	return nil
}
func (e volumeEngine) Start(_ context.Context, p *types.Project) error {
	e.log.note("start %s", p.Name)
	return nil
}
func (e volumeEngine) WaitReady(context.Context, string, string) (string, error) {
	return "http://127.0.0.1:4801", nil
}
func (e volumeEngine) WaitInit(context.Context, string) error { return nil }

// snapFleet is fleet team-b declaring alpha, with the local engine holding
// o, whose engine notes its changes in log.
func snapFleet(t *testing.T, o *engine.Observed, helper func(engine.Helper) error) (*fleet, *changes, func() *workspace.Workspace) {
	t.Helper()
	f := fleetB(t, "\n  alpha: {}", o)
	log := &changes{}
	open := func() *workspace.Workspace {
		return f.openWith(t, func(_ string, e *fakeEngine) engine.Engine {
			return volumeEngine{fakeEngine: e, log: log, helper: helper}
		})
	}
	return f, log, open
}

// alphaWith is alpha, team-b's, its agent in state, with snapshots.
func alphaWith(state string, snaps ...engine.Snapshot) *engine.Observed {
	o := fleetBox("alpha", "team-b")
	o.Containers[0].State = engine.State(state)
	o.Snapshots = snaps
	return o
}

var madeAt = time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)

func snapOf(box, label, fleet string) engine.Snapshot {
	return engine.Snapshot{Volume: compose.SnapshotVolumeName(box, label), Box: box, Label: label, Fleet: fleet, Created: madeAt, Size: 4096}
}

func snapshotOptions() workspace.SnapshotOptions {
	return workspace.SnapshotOptions{Init: hb.Wait{Timeout: time.Second}, Now: func() time.Time { return madeAt }}
}

// A running box is paused while a helper copies its /data into the new
// snapshot volume, and resumed; its freeze record is gone after.
func TestSnapshotOfARunningBox(t *testing.T) {
	f, log, open := snapFleet(t, alphaWith("running"), nil)
	row, err := open().Snapshot(context.Background(), "alpha", "", snapshotOptions())
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"exec health agent", "exec du -sbx /data", "pause",
		"create hbl-alpha_snap-20260102-150405",
		"helper sh hbl-alpha_agent-data:/from hbl-alpha_snap-20260102-150405:/to",
		"unpause",
	}, "\n")
	if got := log.String(); got != want {
		t.Errorf("calls:\n%s\nwant:\n%s", got, want)
	}
	if row.Label != "20260102-150405" || row.SizeBytes != 4096 || row.Volume != "hbl-alpha_snap-20260102-150405" || !row.Created.Equal(madeAt) {
		t.Errorf("row %+v", row)
	}
	if frozen, err := statedir.Beside(f.dir + "/boxes.yaml").Freezes().All(); len(frozen) != 0 || err != nil {
		t.Errorf("freeze records left: %v %v", frozen, err)
	}
	var b strings.Builder
	row.WriteText(&b)
	if b.String() != "snapshot 20260102-150405 of alpha made on the local engine: 4.0 KiB of /data, in volume hbl-alpha_snap-20260102-150405\n" {
		t.Errorf("text %q", b.String())
	}
}

// The default label of a second the box has a snapshot of already is the
// next second's.
func TestSnapshotDefaultLabelMovesOn(t *testing.T) {
	_, _, open := snapFleet(t, alphaWith("exited", snapOf("alpha", "20260102-150405", "team-b")), nil)
	now := madeAt.Add(999 * time.Millisecond)
	o := snapshotOptions()
	o.Now = func() time.Time { t := now; now = now.Add(time.Millisecond); return t }
	row, err := open().Snapshot(context.Background(), "alpha", "", o)
	if err != nil || row.Label != "20260102-150406" {
		t.Errorf("label %q, %v", row.Label, err)
	}
}

// A copy that fails leaves no snapshot volume and the box unpaused.
func TestSnapshotCopyFails(t *testing.T) {
	_, log, open := snapFleet(t, alphaWith("running"), func(h engine.Helper) error {
		return &engine.ExitError{Code: 1, Stderr: "cp: No space left on device"}
	})
	_, err := open().Snapshot(context.Background(), "alpha", "x", snapshotOptions())
	if err == nil || err.Error() != "copying alpha's /data: the helper container exited 1: cp: No space left on device" {
		t.Errorf("err %v", err)
	}
	if got := log.String(); !strings.HasSuffix(got, "hbl-alpha_snap-x:/to\nremove hbl-alpha_snap-x\nunpause") {
		t.Errorf("calls:\n%s", got)
	}
}

// Every refusal comes before anything is changed: a label that is not
// one, a label the box has, an unknown box, another fleet's box, a missing
// or incomplete snapshot, another fleet's snapshot.
func TestSnapshotRefusals(t *testing.T) {
	ctx := context.Background()
	incomplete := snapOf("alpha", "cut", "team-b")
	incomplete.Writing = true
	snaps := []engine.Snapshot{snapOf("alpha", "before", "team-b"), snapOf("alpha", "theirs", "team-a"), incomplete}
	for _, c := range []struct {
		name string
		o    *engine.Observed
		do   func(ws *workspace.Workspace) error
		want string
		is   any
	}{
		{"bad label", alphaWith("running"), func(ws *workspace.Workspace) error {
			_, err := ws.Snapshot(ctx, "alpha", "Before!", snapshotOptions())
			return err
		}, `"Before!" is not a snapshot label; nothing was changed`, nil},
		{"existing label", alphaWith("running", snaps...), func(ws *workspace.Workspace) error {
			_, err := ws.Snapshot(ctx, "alpha", "before", snapshotOptions())
			return err
		}, "box alpha already has a snapshot before on the local engine; nothing was changed", new(*workspace.SnapshotExistsError)},
		{"another fleet's label", alphaWith("running", snaps...), func(ws *workspace.Workspace) error {
			_, err := ws.Snapshot(ctx, "alpha", "theirs", snapshotOptions())
			return err
		}, "box alpha already has a snapshot theirs on the local engine (fleet team-a's); nothing was changed", new(*workspace.SnapshotExistsError)},
		{"unknown box", alphaWith("running"), func(ws *workspace.Workspace) error {
			_, err := ws.Snapshot(ctx, "nope", "x", snapshotOptions())
			return err
		}, `no box "nope" in`, new(*workspace.UndeclaredError)},
		{"another fleet's box", fleetBox("alpha", "team-a"), func(ws *workspace.Workspace) error {
			_, err := ws.Snapshot(ctx, "alpha", "x", snapshotOptions())
			return err
		}, "box alpha on the local engine is fleet team-a's, not fleet team-b's; nothing was changed", new(*workspace.OtherFleetError)},
		{"list another fleet's box", fleetBox("alpha", "team-a"), func(ws *workspace.Workspace) error {
			_, err := ws.ObserveSnapshots(ctx, "alpha")
			return err
		}, "box alpha on the local engine is fleet team-a's", new(*workspace.OtherFleetError)},
		{"list an unknown box", alphaWith("running"), func(ws *workspace.Workspace) error {
			_, err := ws.ObserveSnapshots(ctx, "nope")
			return err
		}, `no box "nope" in`, new(*workspace.UndeclaredError)},
		{"rm: bad label", alphaWith("running", snaps...), func(ws *workspace.Workspace) error {
			_, err := ws.LockedSnapshot(ctx, "alpha", "../x", "boxes snapshot rm")
			return err
		}, `"../x" is not a snapshot label`, nil},
		{"rm: missing snapshot", alphaWith("running", snaps...), func(ws *workspace.Workspace) error {
			_, err := ws.LockedSnapshot(ctx, "alpha", "after", "boxes snapshot rm")
			return err
		}, "box alpha has no snapshot after; nothing was changed", new(*workspace.NoSnapshotError)},
		{"rm: another fleet's snapshot", alphaWith("running", snaps...), func(ws *workspace.Workspace) error {
			_, err := ws.LockedSnapshot(ctx, "alpha", "theirs", "boxes snapshot rm")
			return err
		}, "box alpha on the local engine is fleet team-a's, not fleet team-b's", new(*workspace.OtherFleetError)},
		{"rm: another fleet's box", fleetBox("alpha", "team-a"), func(ws *workspace.Workspace) error {
			_, err := ws.LockedSnapshot(ctx, "alpha", "before", "boxes snapshot rm")
			return err
		}, "box alpha on the local engine is fleet team-a's", new(*workspace.OtherFleetError)},
		{"rm: unknown box", alphaWith("running"), func(ws *workspace.Workspace) error {
			_, err := ws.LockedSnapshot(ctx, "nope", "before", "boxes snapshot rm")
			return err
		}, `no box "nope" in`, new(*workspace.UndeclaredError)},
		{"revert: bad label", alphaWith("running", snaps...), func(ws *workspace.Workspace) error {
			_, err := ws.LockedReversion(ctx, "alpha", "")
			return err
		}, `"" is not a snapshot label`, nil},
		{"revert: missing snapshot", alphaWith("running", snaps...), func(ws *workspace.Workspace) error {
			_, err := ws.LockedReversion(ctx, "alpha", "after")
			return err
		}, "box alpha has no snapshot after; nothing was changed", new(*workspace.NoSnapshotError)},
		{"revert: incomplete snapshot", alphaWith("running", snaps...), func(ws *workspace.Workspace) error {
			_, err := ws.LockedReversion(ctx, "alpha", "cut")
			return err
		}, "snapshot cut of box alpha is incomplete", new(*workspace.IncompleteSnapshotError)},
		{"revert: another fleet's snapshot", alphaWith("running", snaps...), func(ws *workspace.Workspace) error {
			_, err := ws.LockedReversion(ctx, "alpha", "theirs")
			return err
		}, "fleet team-a's", new(*workspace.OtherFleetError)},
		{"revert: another fleet's box", fleetBox("alpha", "team-a"), func(ws *workspace.Workspace) error {
			_, err := ws.LockedReversion(ctx, "alpha", "before")
			return err
		}, "box alpha on the local engine is fleet team-a's", new(*workspace.OtherFleetError)},
		{"revert: unknown box", alphaWith("running"), func(ws *workspace.Workspace) error {
			_, err := ws.LockedReversion(ctx, "nope", "before")
			return err
		}, `no box "nope" in`, new(*workspace.UndeclaredError)},
	} {
		_, log, open := snapFleet(t, c.o, nil)
		err := c.do(open())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
			continue
		}
		if c.is != nil && !errors.As(err, c.is) {
			t.Errorf("%s: %T", c.name, err)
		}
		if len(hint.Lines(err)) == 0 {
			t.Errorf("%s: no hint", c.name)
		}
		if got := log.String(); got != "" {
			t.Errorf("%s: changed:\n%s", c.name, got)
		}
	}
}

// A revert stops the box, copies the snapshot in and starts the box again;
// the box keeps its token.
func TestRevertOfARunningBox(t *testing.T) {
	_, log, open := snapFleet(t, alphaWith("running", snapOf("alpha", "before", "team-b")), nil)
	ws := open()
	if err := ws.Tokens.Put("alpha", "t0ken"); err != nil {
		t.Fatal(err)
	}
	rv, err := ws.LockedReversion(context.Background(), "alpha", "before")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rv.WriteText(&b)
	if want := "box alpha's /data is replaced by snapshot before of 2026-01-02 15:04:05 UTC (4.0 KiB); what /data holds now is lost unless you snapshot it first (boxes snapshot alpha)\n" +
		"box alpha is stopped for it, then started again; it keeps its token\n"; b.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", b.String(), want)
	}
	if err := ws.Revert(context.Background(), rv, workspace.ApplyOptions{Parallelism: 1}, nil); err != nil {
		t.Fatal(err)
	}
	want := "stop hbl-alpha\nhelper sh hbl-alpha_snap-before:/from hbl-alpha_agent-data:/to\nstart hbl-alpha"
	if got := log.String(); got != want {
		t.Errorf("calls:\n%s\nwant:\n%s", got, want)
	}
	if token, _, err := ws.Tokens.Get("alpha"); err != nil || token != "t0ken" {
		t.Errorf("token %q, %v", token, err)
	}
}

// A copy that fails leaves the box stopped, says how to retry, and never
// touches the snapshot; an incomplete snapshot changes nothing, and the
// box runs again.
func TestRevertFailures(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
		is   any
		tail string
	}{
		{&engine.ExitError{Code: 1, Stderr: "cp: No space left on device"},
			"reverting box alpha to snapshot before failed: the helper container exited 1: cp: No space left on device; the box is stopped",
			new(*workspace.RevertError), "hbl-alpha_agent-data:/to"},
		{&engine.ExitError{Code: 3}, "snapshot before of box alpha is incomplete", new(*workspace.IncompleteSnapshotError), "hbl-alpha_agent-data:/to\nstart hbl-alpha"},
	} {
		_, log, open := snapFleet(t, alphaWith("running", snapOf("alpha", "before", "team-b")), func(engine.Helper) error { return c.err })
		ws := open()
		if err := ws.Tokens.Put("alpha", "t0ken"); err != nil {
			t.Fatal(err)
		}
		rv, err := ws.LockedReversion(context.Background(), "alpha", "before")
		if err != nil {
			t.Fatal(err)
		}
		err = ws.Revert(context.Background(), rv, workspace.ApplyOptions{Parallelism: 1}, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, c.is) {
			t.Errorf("%v, want %q", err, c.want)
		}
		if got := log.String(); !strings.HasSuffix(got, c.tail) || strings.Contains(got, "remove") {
			t.Errorf("calls:\n%s", got)
		}
	}
	re := &workspace.RevertError{Box: "alpha", Label: "before"}
	if re.Hint() != "boxes revert alpha before runs the revert again" {
		t.Errorf("hint %q", re.Hint())
	}
}

// The list is this fleet's snapshots on every host, by box then time; rm
// of a box names the snapshots it keeps, and snapshot rm deletes one.
func TestSnapshotsListRmKeepsAndRemove(t *testing.T) {
	older := snapOf("alpha", "z-older", "team-b")
	older.Created = madeAt.Add(-time.Hour)
	o := alphaWith("running", snapOf("alpha", "before", "team-b"), older, snapOf("alpha", "theirs", "team-a"), snapOf("gone", "last", "team-b"))
	_, log, open := snapFleet(t, o, nil)
	ws := open()
	rows, err := ws.ObserveSnapshots(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.Box+"@"+r.Label)
	}
	if strings.Join(got, " ") != "alpha@z-older alpha@before gone@last" {
		t.Errorf("rows %q", got)
	}
	var b strings.Builder
	rows.WriteText(&b)
	want := "BOX    HOST   LABEL    CREATED               SIZE\n" +
		"alpha  local  z-older  2026-01-02T14:04:05Z  4.0 KiB\n" +
		"alpha  local  before   2026-01-02T15:04:05Z  4.0 KiB\n" +
		"gone   local  last     2026-01-02T15:04:05Z  4.0 KiB\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
	// A box that is gone keeps its snapshots, listed and removable.
	if rows, err := ws.ObserveSnapshots(context.Background(), "gone"); err != nil || len(rows) != 1 {
		t.Errorf("gone's snapshots: %v, %v", rows, err)
	}

	host, r, err := ws.LockedRemoval(context.Background(), "alpha")
	if err != nil {
		t.Fatal(err)
	}
	res, p := ws.Removal("alpha", host, r)
	b.Reset()
	res.WriteDeleting(&b)
	if !strings.Contains(b.String(), "box alpha's 2 snapshots are kept: before, z-older (boxes snapshot rm alpha LABEL deletes one)\n") {
		t.Errorf("rm says:\n%s", b.String())
	}
	for _, v := range p.Boxes[0].Delete.Volumes {
		if strings.Contains(v.Name, "_snap-") {
			t.Errorf("rm deletes snapshot volume %s", v.Name)
		}
	}
	ws.Close()

	ws = open()
	s, err := ws.LockedSnapshot(context.Background(), "gone", "last", "boxes snapshot rm")
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.RemoveSnapshot(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if got := log.String(); got != "remove hbl-gone_snap-last" {
		t.Errorf("calls %q", got)
	}
}
