package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/hint"
)

const alphaOnly = "version: 1\nfleet: f\nboxes:\n  alpha: {}\n"

// alphaSnapshotted is alpha, running, with its volume and one snapshot.
func alphaSnapshotted() *engine.Observed {
	o := agentOf("alpha", "sha256:img")
	o.Containers[0].State = "running"
	o.Volumes = []engine.Volume{{Name: compose.VolumeName("alpha", compose.AgentVolume), Box: "alpha", Fleet: "f"}}
	o.Snapshots = []engine.Snapshot{{Volume: compose.SnapshotVolumeName("alpha", "before"), Box: "alpha", Label: "before", Fleet: "f",
		Created: time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC), Size: 5 << 20}}
	return o
}

// revert and snapshot rm show what they do, then want the box's name
// typed, or --confirm without a terminal; a wrong answer changes nothing
// (the engine serves nothing but its snapshot: any change would panic).
func TestRevertAndSnapshotRmConfirm(t *testing.T) {
	revertSays := "box alpha's /data is replaced by snapshot before of 2026-01-02 15:04:05 UTC (5.0 MiB); what /data holds now is lost unless you snapshot it first (boxes snapshot alpha)\n" +
		"box alpha is stopped for it, then started again; it keeps its token\n"
	rmSays := "snapshot before of box alpha, made 2026-01-02 15:04:05 UTC on the local engine: 5.0 MiB of /data, volume hbl-alpha_snap-before\n"
	for _, c := range []struct {
		name   string
		tty    bool
		run    func(env *Env) error
		stdout string
		err    string
		hint   string
	}{
		{"revert, typed wrong", true, func(env *Env) error {
			return revert(context.Background(), env, fakeWorkspace(t, alphaOnly, map[string]*engine.Observed{"": alphaSnapshotted()}), "alpha", "before", "")
		}, revertSays + "Type the box's name to revert it: ", "not confirmed; nothing was changed", ""},
		{"revert, no terminal", false, func(env *Env) error {
			return revert(context.Background(), env, fakeWorkspace(t, alphaOnly, map[string]*engine.Observed{"": alphaSnapshotted()}), "alpha", "before", "")
		}, revertSays, "revert replaces alpha's /data and there is no terminal to confirm it; nothing was changed", "pass --confirm alpha"},
		{"snapshot rm, typed wrong", true, func(env *Env) error {
			return removeSnapshot(context.Background(), env, fakeWorkspace(t, alphaOnly, map[string]*engine.Observed{"": alphaSnapshotted()}), "alpha", "before", "")
		}, rmSays + "Type the box's name to delete its snapshot before: ", "not confirmed; nothing was changed", ""},
		{"snapshot rm, no terminal", false, func(env *Env) error {
			return removeSnapshot(context.Background(), env, fakeWorkspace(t, alphaOnly, map[string]*engine.Observed{"": alphaSnapshotted()}), "alpha", "before", "")
		}, rmSays, "snapshot rm deletes snapshot before of alpha and there is no terminal to confirm it; nothing was changed", "pass --confirm alpha"},
	} {
		var out, errb bytes.Buffer
		env := &Env{Streams: Streams{In: strings.NewReader("beta\n"), Out: &out, Err: &errb, IsTTY: c.tty}}
		err := c.run(env)
		if err == nil || err.Error() != c.err {
			t.Errorf("%s: %v, want %q", c.name, err, c.err)
			continue
		}
		if h := hint.Lines(err); c.hint != "" && (len(h) != 1 || h[0] != c.hint) {
			t.Errorf("%s: hints %q", c.name, h)
		}
		if out.String() != c.stdout {
			t.Errorf("%s: stdout\n%q\nwant\n%q", c.name, out.String(), c.stdout)
		}
	}
}

// A --confirm that names another box is refused before anything.
func TestCheckConfirm(t *testing.T) {
	if err := checkConfirm("alpha", ""); err != nil {
		t.Error(err)
	}
	if err := checkConfirm("alpha", "alpha"); err != nil {
		t.Error(err)
	}
	err := checkConfirm("alpha", "beta")
	if err == nil || err.Error() != "--confirm beta does not name the box, alpha; nothing was changed" || hint.Lines(err)[0] != "pass --confirm alpha" {
		t.Errorf("%v", err)
	}
}

// snapshots prints a table, or with --json an array of rows (empty, not null).
func TestSnapshotsListing(t *testing.T) {
	var out bytes.Buffer
	env := &Env{Streams: Streams{Out: &out}}
	ws := fakeWorkspace(t, alphaOnly, map[string]*engine.Observed{"": alphaSnapshotted()})
	if err := listSnapshots(context.Background(), env, ws, "alpha", true); err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"box": "alpha", "host": "", "label": "before", "created": "2026-01-02T15:04:05Z", "size_bytes": float64(5 << 20), "volume": "hbl-alpha_snap-before"}
	if len(rows) != 1 || len(rows[0]) != len(want) {
		t.Fatalf("rows %v", rows)
	}
	for k, v := range want {
		if rows[0][k] != v {
			t.Errorf("%s: %v, want %v", k, rows[0][k], v)
		}
	}

	out.Reset()
	ws = fakeWorkspace(t, alphaOnly, map[string]*engine.Observed{"": agentOf("alpha", "sha256:img")})
	if err := listSnapshots(context.Background(), env, ws, "", true); err != nil || strings.TrimSpace(out.String()) != "[]" {
		t.Errorf("no snapshots as JSON: %q, %v", out.String(), err)
	}
	out.Reset()
	if err := listSnapshots(context.Background(), env, ws, "alpha", false); err != nil || out.String() != "no snapshots\n" {
		t.Errorf("no snapshots: %q, %v", out.String(), err)
	}
}
