package workspace_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/workspace"
)

// fleetBox is box name as fleet (empty: made before fleets) left it: its
// agent container and both volumes.
func fleetBox(name, fleet string) *engine.Observed {
	return &engine.Observed{
		Containers: []engine.Container{{ID: "c-" + name, Name: "hbl-" + name + "-agent-1", Box: name, Fleet: fleet, Service: compose.AgentService, State: "running", Image: "sha256:img"}},
		Volumes: []engine.Volume{
			{Name: compose.VolumeName(name, compose.AgentVolume), Box: name, Fleet: fleet},
			{Name: compose.VolumeName(name, compose.ExecutorVolume), Box: name, Fleet: fleet},
		},
	}
}

// fleetB is a working directory of fleet team-b declaring boxes, with the
// local engine holding snapshot.
func fleetB(t *testing.T, boxes string, snapshot *engine.Observed) *fleet {
	t.Helper()
	f := newFleet(t)
	if err := os.WriteFile(filepath.Join(f.dir, "boxes.yaml"), []byte("version: 1\nfleet: team-b\nboxes:"+boxes+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.snapshots[""] = snapshot
	return f
}

// Every way a command reaches one box refuses another fleet's box, naming
// that fleet, whether or not this fleet declares the name.
func TestOtherFleetsBoxIsRefused(t *testing.T) {
	for _, declared := range []string{" {}", "\n  pr-b: {}"} {
		f := fleetB(t, declared, fleetBox("pr-b", "team-a"))
		ctx := context.Background()
		reach := map[string]func(ws *workspace.Workspace) error{
			"ObserveBox":     func(ws *workspace.Workspace) error { _, _, err := ws.ObserveBox(ctx, "pr-b"); return err },
			"ObserveRemoval": func(ws *workspace.Workspace) error { _, _, err := ws.ObserveRemoval(ctx, "pr-b"); return err },
			"LockedBox":      func(ws *workspace.Workspace) error { _, _, err := ws.LockedBox(ctx, "pr-b", "boxes stop"); return err },
			"LockedRemoval":  func(ws *workspace.Workspace) error { _, _, err := ws.LockedRemoval(ctx, "pr-b"); return err },
			"BoxContainer": func(ws *workspace.Workspace) error {
				_, _, err := ws.BoxContainer(ctx, "pr-b", compose.AgentService, false, "boxes save")
				return err
			},
			"ObserveDoctor": func(ws *workspace.Workspace) error { _, err := ws.ObserveDoctor(ctx, "pr-b"); return err },
			"Save": func(ws *workspace.Workspace) error {
				_, err := ws.Save(ctx, "pr-b", "out.tar.s2.age", workspace.SaveOptions{})
				return err
			},
		}
		if declared != " {}" {
			reach["LoadPlan"] = func(ws *workspace.Workspace) error { _, _, err := ws.LoadPlan(ctx, "a.tar.s2.age", "pr-b"); return err }
		}
		for what, fn := range reach {
			ws := f.open(t)
			err := fn(ws)
			ws.Close()
			var other *workspace.OtherFleetError
			if !errors.As(err, &other) || !errors.Is(err, reconcile.ErrHeldByFleet) {
				t.Errorf("%s (declared %q): %v, want the box refused as another fleet's", what, declared, err)
				continue
			}
			if msg := err.Error(); !strings.Contains(msg, "box pr-b on the local engine is fleet team-a's, not fleet team-b's; nothing was changed") {
				t.Errorf("%s: message %q", what, msg)
			}
		}
	}
}

// A box made before fleets existed, which no fleet declares, is reached by
// rm alone; declared, it is this fleet's.
func TestBoxOfNoFleetIsReachedOnlyByRm(t *testing.T) {
	ctx := context.Background()
	f := fleetB(t, " {}", fleetBox("old", ""))
	ws := f.open(t)
	_, _, err := ws.LockedBox(ctx, "old", "boxes stop")
	ws.Close()
	var none *workspace.NoFleetError
	if !errors.As(err, &none) || !strings.Contains(err.Error(), "belongs to no fleet") {
		t.Errorf("stop of a box of no fleet: %v", err)
	}
	ws = f.open(t)
	host, r, err := ws.LockedRemoval(ctx, "old")
	if err != nil || r.Empty() {
		t.Fatalf("rm of a box of no fleet: %v", err)
	}
	res, _ := ws.Removal("old", host, r)
	if !res.NoFleet {
		t.Errorf("rm's result does not say the box is of no fleet: %+v", res)
	}
	var b strings.Builder
	res.WriteDeleting(&b)
	if !strings.Contains(b.String(), "box old belongs to no fleet") {
		t.Errorf("rm does not say the box is of no fleet:\n%s", b.String())
	}

	f = fleetB(t, "\n  old: {}", fleetBox("old", ""))
	if _, _, err := f.open(t).LockedBox(ctx, "old", "boxes stop"); err != nil {
		t.Errorf("stop of a declared box of no fleet: %v", err)
	}
	f = fleetB(t, " {}", fleetBox("mine", "team-b"))
	ws = f.open(t)
	host, r, err = ws.LockedRemoval(ctx, "mine")
	if err != nil {
		t.Fatalf("rm of this fleet's undeclared box: %v", err)
	}
	if res, _ := ws.Removal("mine", host, r); res.NoFleet {
		t.Errorf("this fleet's box called no fleet's: %+v", res)
	}
}

// An undeclared name held on two hosts is found where this fleet holds it,
// not where another fleet does.
func TestUndeclaredBoxPrefersThisFleetsHost(t *testing.T) {
	f := newFleet(t)
	f.snapshots[""] = &engine.Observed{}
	f.snapshots["nexus"] = fleetBox("stray", "someone-else")
	ws := f.open(t)
	f.snapshots["zulu"] = fleetBox("stray", ws.Config.Fleet)
	host, _, err := f.open(t).ObserveBox(context.Background(), "stray")
	if err != nil || host != "zulu" {
		t.Errorf("stray found on %q (%v), want zulu, where this fleet holds it", host, err)
	}
}
