package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/statedir"
)

// create makes box bp's network, volumes and containers from project. A
// refused create of a box that had nothing before it is undone.
func (a *Applier) create(ctx context.Context, eng engine.Lifecycle, bp reconcile.BoxPlan, project *types.Project) error {
	undoable := a.nothingYet(ctx, eng, bp)
	a.Progress.Step(bp.Name, "creating network, volumes and containers")
	err := eng.Create(ctx, project, false)
	if err != nil && raced(err) {
		err = a.remake(ctx, eng, bp, project, err)
	}
	if err != nil && undoable {
		return a.createFailed(ctx, eng, bp, err)
	}
	return err
}

// recreate replaces box bp's containers with project's, volumes kept, once
// what an interrupted apply left is cleared; it returns the containers as
// they were, for putBack. A refused create puts them back at once.
func (a *Applier) recreate(ctx context.Context, eng engine.Lifecycle, bp reconcile.BoxPlan, project *types.Project, token string) (engine.Previous, error) {
	if err := a.clearStrays(ctx, eng, bp); err != nil {
		return nil, err
	}
	prev, err := eng.Previous(ctx, bp.Name)
	if err != nil {
		return nil, fmt.Errorf("recording the containers before replacing them: %w", err)
	}
	create := func() error { return eng.Create(ctx, project, true) }
	switch {
	case bp.GateOnly:
		a.Progress.Step(bp.Name, "replacing the gate (the agent keeps running)")
		create = func() error { return eng.Replace(ctx, project, []string{compose.GateService}) }
	case bp.ExecutorAndGate:
		a.Progress.Step(bp.Name, "replacing the executor and the gate (the agent keeps running)")
		create = func() error {
			return eng.Replace(ctx, project, []string{compose.ExecutorService, compose.GateService})
		}
	default:
		a.Progress.Step(bp.Name, "replacing containers (volumes kept)")
	}
	if err := create(); err != nil {
		return nil, a.putBack(ctx, eng, bp, prev, token, err)
	}
	return prev, nil
}

// clearStrays removes the containers and second networks an interrupted
// apply left, and gives a container left under its replacement's name its
// own name back: first, since compose names its own replacement of a
// container from the container's, and the previous containers are put back
// under the names recorded next.
func (a *Applier) clearStrays(ctx context.Context, eng engine.Lifecycle, bp reconcile.BoxPlan) error {
	for _, c := range bp.Strays {
		a.Progress.Step(bp.Name, "removing container "+c.Name+" (left by an interrupted apply)")
		if err := eng.RemoveContainer(ctx, c.ID); err != nil {
			return fmt.Errorf("removing container %s: %w", c.Name, err)
		}
	}
	for _, n := range bp.StrayNetworks {
		a.Progress.Step(bp.Name, "removing network "+n.Name+" "+reconcile.ShortID(n.ID)+" (a second network of that name)")
		if err := eng.RemoveNetwork(ctx, n.ID); err != nil {
			return fmt.Errorf("removing the second network %s (%s): %w", n.Name, reconcile.ShortID(n.ID), err)
		}
	}
	for _, r := range bp.Reasons {
		if r.Kind != "renamed" {
			continue
		}
		// An engine that cannot rename has the container made again under
		// its own name by the recreate that follows (its volumes are kept).
		if !eng.Capabilities().Rename {
			a.Progress.Step(bp.Name, "removing container "+r.Old+" (left under that name by an interrupted apply; it is made again)")
			if err := eng.RemoveContainer(ctx, r.Old); err != nil {
				return fmt.Errorf("removing container %s: %w", r.Old, err)
			}
			continue
		}
		a.Progress.Step(bp.Name, "renaming container "+r.Old+" to "+r.New+" (left by an interrupted apply)")
		if err := eng.RenameContainer(ctx, r.Old, r.New); err != nil {
			return fmt.Errorf("renaming container %s: %w", r.Old, err)
		}
	}
	return nil
}

func raced(err error) bool { return errors.Is(err, engine.ErrRaced) }

// remake undoes what such a late request made, once, and makes the box's
// containers again: a second network of the box's name goes, with every
// container of the box not running, as the plan does for a duplicate it
// sees.
func (a *Applier) remake(ctx context.Context, eng engine.Lifecycle, bp reconcile.BoxPlan, project *types.Project, cause error) error {
	o, err := eng.Observe(ctx)
	if err != nil {
		return fmt.Errorf("%w; observing the box again: %v", cause, err)
	}
	r := o.Of(bp.Name).Labelled(a.Config.Fleet)
	strays, onStray := reconcile.StrayNetworks(bp.Name, r)
	a.Progress.Step(bp.Name, "an interrupted apply's request landed after the plan ("+firstLine(cause)+"); clearing what it made")
	for _, c := range r.Containers {
		if c.State == engine.Running && !onStray[c.ID] {
			continue
		}
		a.Progress.Step(bp.Name, "removing container "+c.Name)
		if err := eng.RemoveContainer(ctx, c.ID); err != nil {
			return fmt.Errorf("%w; removing container %s: %v", cause, c.Name, err)
		}
	}
	for _, n := range strays {
		a.Progress.Step(bp.Name, "removing network "+n.Name+" "+reconcile.ShortID(n.ID)+" (a second network of that name)")
		if err := eng.RemoveNetwork(ctx, n.ID); err != nil {
			return fmt.Errorf("%w; removing the second network %s (%s): %v", cause, n.Name, reconcile.ShortID(n.ID), err)
		}
	}
	return eng.Create(ctx, project, false)
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// nothingYet reports whether the engine holds nothing of a box the plan
// found with nothing, looked at just before its create, under the box's
// lock: what the create makes is then all the box has, and the create can
// be undone. A create over what is there (the volumes of a restore cut
// short, or a box a load made since the plan) never is.
func (a *Applier) nothingYet(ctx context.Context, eng engine.Lifecycle, bp reconcile.BoxPlan) bool {
	if !reconcile.HasKind(bp.Reasons, "new") {
		return false
	}
	if a.Held[bp.Name] {
		// Observed under the lock already, by the caller's plan.
		return true
	}
	o, err := eng.Observe(ctx)
	return err == nil && o.Of(bp.Name).Empty()
}

// createFailed handles the failed create of a box that had nothing before
// it. Refused by the engine (a setting it does not take, a name taken), it
// would fail the same way every time: what it made is removed (the network,
// the volumes, new and empty since nothing was restored into them yet, and
// any container), with the token and the restore record it wrote, so that
// the next plan shows the box as never made rather than a half-made box to
// explain. Cut short (interrupted, the engine gone), it is left: the next
// plan shows it and the next apply finishes it.
func (a *Applier) createFailed(ctx context.Context, eng engine.Lifecycle, bp reconcile.BoxPlan, cause error) error {
	if ctx.Err() != nil || errors.Is(cause, engine.ErrUnreachable) {
		return cause
	}
	o, err := eng.Observe(ctx)
	if err != nil {
		return fmt.Errorf("%w; what the create made could not be listed: %v (the next plan shows it)", cause, err)
	}
	made := o.Of(bp.Name).Labelled(a.Config.Fleet)
	if !made.Empty() {
		a.Progress.Step(bp.Name, "the create failed; removing what it made")
		if err := a.remove(ctx, eng, bp.Name, reconcile.DeletionOf(bp.Host, bp.Name, made).Delete); err != nil {
			return fmt.Errorf("%w; removing what the create made failed: %v (the next plan shows it)", cause, err)
		}
	}
	// A seed cut short before this create keeps its record: the box is
	// still to be seeded from that archive or box.
	if (bp.Restore != "" || bp.From != "") && !reconcile.HasKind(bp.Reasons, "incomplete") {
		if err := statedir.Beside(a.Config.Path).Restores().Done(bp.Name); err != nil {
			return err
		}
	}
	if err := a.Tokens.Remove(bp.Name); err != nil {
		return err
	}
	if made.Empty() {
		return cause
	}
	return &CreateError{Err: cause, Removed: made}
}

// CreateError is a create the engine refused, after what it made was removed.
type CreateError struct {
	Err     error
	Removed engine.Resources
}

func (e *CreateError) Error() string {
	return fmt.Sprintf("%v; what the create made was removed (%s), nothing else was touched", e.Err, e.Removed.Counts())
}

func (e *CreateError) Unwrap() error { return e.Err }

// restoreFailed handles a restore that failed. Cut short (interrupted, or
// the engine gone), the record stays and the next plan seeds the box
// again. Refused (by the engine, or by the archive's own checks while it
// streamed), it would fail the same way every time: what the restore made
// is removed (the resources labelled with the box and this fleet: the plan
// saw none but a restore's own), with the restore record and the token,
// and the error says why.
func (a *Applier) restoreFailed(ctx context.Context, eng engine.Lifecycle, bp reconcile.BoxPlan, cause error) error {
	err := fmt.Errorf("restoring from %s: %w", a.shown(bp.Restore), cause)
	if bp.From != "" {
		err = fmt.Errorf("seeding from %s: %w", reconcile.FromText(bp.From), cause)
	}
	if ctx.Err() != nil || errors.Is(cause, engine.ErrUnreachable) {
		return err
	}
	o, oerr := eng.Observe(ctx)
	if oerr != nil {
		return fmt.Errorf("%w; what the restore created could not be listed: %v (the next plan shows it as restore incomplete)", err, oerr)
	}
	made := o.Of(bp.Name).Labelled(a.Config.Fleet)
	a.Progress.Step(bp.Name, "the restore failed; removing what it created")
	if derr := a.delete(ctx, eng, reconcile.DeletionOf(bp.Host, bp.Name, made)); derr != nil {
		return fmt.Errorf("%w; removing what the restore created failed: %v (the next plan shows it as restore incomplete)", err, derr)
	}
	if bp.From != "" {
		return &ForkError{From: bp.From, Err: cause, Removed: made}
	}
	return &RestoreError{Archive: a.shown(bp.Restore), Err: cause, Removed: made}
}

// RestoreError is a restore refused by the engine or by the archive's
// checks, after what it created was removed.
type RestoreError struct {
	// Archive is the archive as messages name it.
	Archive string
	Err     error
	Removed engine.Resources
}

func (e *RestoreError) Error() string {
	return fmt.Sprintf("restoring from %s: %v; what the restore created was removed (%s), nothing else was touched", e.Archive, e.Err, e.Removed.Counts())
}

func (e *RestoreError) Unwrap() error { return e.Err }

// HintLines says what to do next.
func (e *RestoreError) HintLines() []string {
	return []string{"boxes verify " + e.Archive + " checks the archive without Docker; fix or replace it, then run the command again"}
}

// ForkError is a fork refused by the engine (a snapshot cut short, a copy
// that failed), after what it created was removed.
type ForkError struct {
	From    string
	Err     error
	Removed engine.Resources
}

func (e *ForkError) Error() string {
	return fmt.Sprintf("seeding from %s: %v; what the fork created was removed (%s), nothing else was touched", reconcile.FromText(e.From), e.Err, e.Removed.Counts())
}

func (e *ForkError) Unwrap() error { return e.Err }

// Hint says what to look at.
func (e *ForkError) Hint() string {
	box, _ := spec.SplitFrom(e.From)
	return "boxes snapshots " + box + " lists its snapshots; boxes apply tries the fork again"
}

// putBack puts a recreated box whose new containers failed back on its
// previous ones, and checks that those are ready again.
func (a *Applier) putBack(ctx context.Context, eng engine.Lifecycle, bp reconcile.BoxPlan, prev engine.Previous, token string, cause error) error {
	if ctx.Err() != nil {
		// Interrupted, not failed: the next plan shows what is left.
		return cause
	}
	e := &NotReadyError{Err: cause}
	if prev == nil {
		e.Back = errors.New("the box had no containers before")
		return e
	}
	a.Progress.Step(bp.Name, "not ready; putting the previous containers back")
	started, err := prev.Restore(ctx)
	if err != nil {
		e.Back = err
		return e
	}
	e.Restored = true
	// A box recreated for a new token ran with an older one, which
	// .boxes/secrets no longer holds.
	if !started || reconcile.HasKind(bp.Reasons, "token") {
		return e
	}
	a.Progress.Step(bp.Name, "waiting for the previous containers")
	if _, err := eng.WaitReady(ctx, bp.Name, token); err != nil {
		e.Back = err
	} else if err := eng.WaitInit(ctx, bp.Name); err != nil {
		e.Back = err
	}
	return e
}
