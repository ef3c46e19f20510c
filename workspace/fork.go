package workspace

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/hermes-box/boxes/apply"
	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/snapshot"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/statedir"
)

// forker seeds the boxes a plan creates with from: on their own engine:
// the applier's Forker. A snapshot is copied as it is; a box as it is now,
// quiesced and paused while it is copied if it runs, under its lock.
type forker struct {
	w *Workspace
	// image is the image the helpers run: the plan's, which the new box
	// was just created with.
	image string
	init  hb.Wait
	step  func(box, msg string)

	// sources serialises the copies of one source box within this apply:
	// its lock is taken once at a time.
	sources sync.Map // box name → *sync.Mutex
}

var _ apply.Seeder = (*forker)(nil)

// Seed copies from (BOX or BOX@LABEL) into the created, not yet started
// box on host.
func (f *forker) Seed(ctx context.Context, host, box, from string) error {
	e, err := f.w.Engine(ctx, host)
	if err != nil {
		return err
	}
	source, label := spec.SplitFrom(from)
	if label != "" {
		err := snapshot.Fork{Box: box, Source: compose.SnapshotVolumeName(source, label), Snapshot: true, Image: f.image}.Run(ctx, e)
		switch {
		case errors.Is(err, snapshot.ErrIncomplete):
			return &reconcile.NoSourceError{From: from, Host: host, Incomplete: true}
		case errors.Is(err, engine.ErrNoVolume):
			return &reconcile.NoSourceError{From: from, Host: host}
		}
		return err
	}
	mu, _ := f.sources.LoadOrStore(source, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	lock, err := statedir.LockBox(f.w.Path, source, "boxes apply (copying its /data into "+box+")")
	if err != nil {
		return fmt.Errorf("copying box %s: %w", source, err)
	}
	defer lock.Unlock()
	o, err := e.Observe(ctx)
	if err != nil {
		return err
	}
	r := o.Of(source).Labelled(f.w.Config.Fleet)
	if !hasVolume(r, compose.VolumeName(source, compose.AgentVolume)) {
		return fmt.Errorf("box %s has no /data volume on %s to copy", source, reconcile.HostLabel(host))
	}
	agent, _ := r.Container(compose.AgentService)
	fork := snapshot.Fork{Box: box, Source: compose.VolumeName(source, compose.AgentVolume), Image: f.image}
	if agent.State == engine.Running {
		step := func(msg string) { f.step(box, msg+" "+source) }
		frozen, err := backup.Freeze{Box: source, Agent: agent.ID, Config: f.w.Path, Host: host, Init: f.init, Healthy: agent.Health == engine.Healthy,
			Step: step, Warn: f.w.opts.Warn}.Hold(ctx, e)
		if err != nil {
			return err
		}
		defer frozen.Thaw()
		fork.Quiesced = true
	}
	return fork.Run(ctx, e)
}

// Finish has nothing to resume: the copy's last step took its marker away.
// The applier waits for hb init next.
func (f *forker) Finish(context.Context, string, string) error { return nil }

// SeedingError is a snapshot that boxes.yaml seeds boxes or pools from
// (from:), which snapshot rm leaves.
type SeedingError struct {
	Box, Label string
	// Seeds are what seed from it: "box NAME" or "pool NAME".
	Seeds []string
}

func (e *SeedingError) Error() string {
	return fmt.Sprintf("boxes.yaml seeds %s from snapshot %s of box %s (from: %s@%s); nothing was changed", strings.Join(e.Seeds, " and "), e.Label, e.Box, e.Box, e.Label)
}

// Hint is what to change first.
func (e *SeedingError) Hint() string {
	return "point their from: at another snapshot, or take it out of boxes.yaml, first"
}

// SeedsFrom refuses snapshot s when a from: of boxes.yaml names it: a box
// still to be made, or a pool's clean state, would have nothing to be
// seeded from.
func (w *Workspace) SeedsFrom(s SnapshotRow) error {
	from := s.Box + "@" + s.Label
	var seeds []string
	for _, b := range w.Config.Boxes {
		if b.From == from && b.Host == s.Host && b.Pool == "" {
			seeds = append(seeds, "box "+b.Name)
		}
	}
	for _, p := range w.Config.Pools {
		if p.From == from && p.Host == s.Host {
			seeds = append(seeds, "pool "+p.Name)
		}
	}
	if len(seeds) == 0 {
		return nil
	}
	return &SeedingError{Box: s.Box, Label: s.Label, Seeds: seeds}
}

// hasVolume reports whether r holds volume name.
func hasVolume(r engine.Resources, name string) bool {
	for _, v := range r.Volumes {
		if v.Name == name {
			return true
		}
	}
	return false
}
