// Package apply carries out a plan made by package reconcile, box by box
// through one narrow engine interface (engine.Lifecycle): creates, recreates with their put
// back, starts, stops and deletes, the image brought to the hosts that lack
// it, and moves of a box with its data between hosts. It is the one
// executor of every change: apply's plans and the one-box plans of load,
// rm, start and stop.
package apply

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/statedir"
)

// Progress receives live per-box progress; it must be safe for concurrent use.
type Progress interface {
	Step(box, msg string)
	Done(box string, err error)
}

// Seeder fills a new box's /data from what seeds it: its restore: archive,
// or (the Forker) its from:, a box or a snapshot of one on its engine.
type Seeder interface {
	// Seed fills the created, not yet started box from source (an archive
	// path, or a from: value). The box must then come up quiesced, so that
	// a seed cut short never runs as if it were whole.
	Seed(ctx context.Context, host, box, source string) error
	// Finish ends the quiescence of the started box and waits for hb init.
	Finish(ctx context.Context, host, box string) error
}

// Preparer is a Seeder with work to start beside the create of the box it
// seeds: a restore measures its host's room for /data there.
type Preparer interface {
	// Prepare starts that work for seeding box on host from source, the
	// box to be made from image; it does not wait for it.
	Prepare(ctx context.Context, host, box, source, image string)
}

// Thawer undoes what a save that died left behind: a paused, quiesced box.
type Thawer interface {
	// Thaw unpauses and resumes the box's running agent, if a save that is
	// no longer running froze it.
	Thaw(ctx context.Context, host, box string) error
}

// ErrNoToken is a box to start without a token in .boxes/secrets.
var ErrNoToken = hint.New("the box has no token in .boxes/secrets", "run boxes plan, which recovers it from the box's containers")

// ErrUndeclared is a change to a box boxes.yaml does not declare.
var ErrUndeclared = hint.New("box not declared", "declare it under boxes: in boxes.yaml first")

// Applier carries out plans.
type Applier struct {
	Config      *spec.Config
	Engines     map[string]engine.Lifecycle // by host name
	Tokens      statedir.Tokens
	Parallelism int
	Progress    Progress
	// Seeder restores boxes created with restore:; nil refuses them.
	Seeder Seeder
	// Forker seeds boxes created with from:; nil refuses them.
	Forker Seeder
	// Held names boxes whose lock the caller took before it observed them
	// (the one-box commands); the applier takes every other box's.
	Held map[string]bool
	// Mover carries moves' data between hosts; nil refuses moves.
	Mover Mover
	// ConfirmedDeletes names the boxes whose delete the user confirmed: a
	// move deletes the old copy only then.
	ConfirmedDeletes map[string]bool
	// Thawer resumes boxes a plan finds frozen by a save that died; nil
	// leaves them as they are.
	Thawer Thawer
	// Images brings the plan's image to the hosts that lack it; nil fails
	// the boxes on those hosts.
	Images ImageCarrier
	// Shown is an archive's path as messages name it (the command line's
	// way: relative to the working directory below it); a load's plan
	// holds the absolute path. Nil names paths as they are.
	Shown func(path string) string
	// Doors are what each box's gate is made with besides boxes.yaml, by
	// box: the same as the plan's Input.Doors.
	Doors map[string]compose.Door
}

func (a *Applier) shown(path string) string {
	if a.Shown == nil {
		return path
	}
	return a.Shown(path)
}

// BoxError is the failure of one box's steps.
type BoxError struct {
	Box string
	// Host is the box's host, named in the message when it is not the
	// local engine (and the error does not name it already).
	Host string
	Err  error
}

func (e *BoxError) Error() string {
	msg := e.Err.Error()
	if e.Host != "" && !strings.Contains(msg, reconcile.HostLabel(e.Host)) {
		return fmt.Sprintf("%s (%s): %s", e.Box, reconcile.HostLabel(e.Host), msg)
	}
	return fmt.Sprintf("%s: %s", e.Box, msg)
}
func (e *BoxError) Unwrap() error { return e.Err }

// Apply runs every box's steps, boxes in parallel and each box's steps in
// order. A failing box does not stop the others; all failures come back
// joined (errors.Join), one *BoxError per box in name order.
//
// Recreates onto a new image go through a canary: one such box is
// recreated on its own first, and only once it is ready do the others
// follow. Should the canary's new containers not become ready, it is put
// back on what it ran before and no other box is recreated onto that image;
// they fail with ErrCanaryFailed, untouched, and the next plan still shows
// the change.
//
// A host that lacks the image gets it first (the plan's Images), the hosts
// in parallel; the boxes there that use it wait for it, and fail when it
// fails.
func (a *Applier) Apply(ctx context.Context, p *reconcile.Plan) error {
	n := a.Parallelism
	if n < 1 {
		n = 1
	}
	sem := make(chan struct{}, n)
	var (
		mu   sync.Mutex
		errs []*BoxError
		wg   sync.WaitGroup
	)
	fail := func(bp reconcile.BoxPlan, err error) {
		a.Progress.Done(bp.Name, err)
		if err != nil {
			mu.Lock()
			errs = append(errs, &BoxError{Box: bp.Name, Host: bp.Host, Err: err})
			mu.Unlock()
		}
	}
	images := a.bringImages(ctx, p)
	run := func(bp reconcile.BoxPlan) error {
		err := images.wait(ctx, bp)
		if err == nil {
			sem <- struct{}{}
			defer func() { <-sem }()
			err = a.applyBox(ctx, p.Image, bp)
		}
		fail(bp, err)
		return err
	}
	spawn := func(bp reconcile.BoxPlan) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = run(bp)
		}()
	}
	var gated, copies []reconcile.BoxPlan
	for _, bp := range p.Boxes {
		switch {
		case bp.Action == reconcile.NoOp:
		case bp.Action == reconcile.Recreate && reconcile.HasKind(bp.Reasons, "image"):
			gated = append(gated, bp)
		case copiesBox(bp):
			copies = append(copies, bp)
		default:
			spawn(bp)
		}
	}
	if len(gated) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			canaryFirst(gated, p.Image, run, spawn, fail)
		}()
	}
	wg.Wait()
	// A fork of a box as it is copies it once every other box is done, so
	// that a box this apply creates or changes is whole first.
	for _, bp := range copies {
		source, _ := spec.SplitFrom(bp.From)
		if failed(errs, source) {
			fail(bp, &SourceFailedError{Source: source})
			continue
		}
		spawn(bp)
	}
	wg.Wait()
	if len(errs) == 0 {
		return nil
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Box < errs[j].Box })
	all := make([]error, len(errs))
	for i, e := range errs {
		all[i] = e
	}
	return errors.Join(all...)
}

// copiesBox reports whether bp seeds a box from another box's /data as it
// is (from: BOX, no snapshot).
func copiesBox(bp reconcile.BoxPlan) bool {
	_, label := spec.SplitFrom(bp.From)
	return bp.From != "" && label == "" && (bp.Action == reconcile.Create || bp.Action == reconcile.Recreate)
}

// failed reports whether errs holds box's failure.
func failed(errs []*BoxError, box string) bool {
	for _, e := range errs {
		if e.Box == box {
			return true
		}
	}
	return false
}

// SourceFailedError is a fork left alone because the box whose /data it
// copies failed in the same apply.
type SourceFailedError struct{ Source string }

func (e *SourceFailedError) Error() string {
	return fmt.Sprintf("not created: box %s, whose /data it copies, failed in this apply", e.Source)
}

// canaryFirst applies gated, the recreates for a new image, one at a time
// until one proves the image (run it, then spawn the rest at once), or fails
// not ready with it (then the rest fail as its canary's). A box stopped, or
// failed before its containers were touched, proves nothing: the next one
// is the canary.
func canaryFirst(gated []reconcile.BoxPlan, image string, run func(reconcile.BoxPlan) error, spawn func(reconcile.BoxPlan), fail func(reconcile.BoxPlan, error)) {
	for i, bp := range gated {
		err := run(bp)
		var nr *NotReadyError
		switch {
		case err == nil && bp.State == spec.Stopped:
			// Created, never started: that proves nothing, and the next
			// box is the canary.
		case err == nil:
			// The image proved itself: the rest in parallel.
			for _, rest := range gated[i+1:] {
				spawn(rest)
			}
			return
		case errors.As(err, &nr):
			for _, rest := range gated[i+1:] {
				fail(rest, &CanaryError{Canary: bp.Name, Image: image, Err: nr.Err})
			}
			return
		}
		// It failed before its containers were touched (a held lock, an
		// engine away): that says nothing of the image, and the next box
		// is the canary.
	}
}

// ErrCanaryFailed marks a box left alone because the canary of its change failed.
var ErrCanaryFailed = errors.New("the canary of this change failed")

// CanaryError is a recreate not started because the same change failed on
// the canary box first.
type CanaryError struct {
	Canary string
	Image  string
	Err    error // the canary's failure
}

func (e *CanaryError) Error() string {
	return fmt.Sprintf("not recreated, left on its current image: the new image %s failed on %s first", reconcile.ShortID(e.Image), e.Canary)
}
func (e *CanaryError) Unwrap() error { return ErrCanaryFailed }

// NotReadyError is a recreate whose new containers did not become ready,
// and what became of the box after.
type NotReadyError struct {
	Err error // why the new containers are not ready
	// Restored: the box runs its previous containers again.
	Restored bool
	// Back is why the previous containers could not be put back, or are
	// not ready either; nil if they are.
	Back error
}

func (e *NotReadyError) Error() string {
	switch {
	case e.Restored && e.Back == nil:
		return fmt.Sprintf("the new containers did not become ready: %v; the box is back on its previous image and settings (volumes untouched)", e.Err)
	case e.Restored:
		return fmt.Sprintf("the new containers did not become ready: %v; the previous containers are back but not ready either: %v", e.Err, e.Back)
	default:
		return fmt.Sprintf("the new containers did not become ready: %v; could not put the previous ones back: %v", e.Err, e.Back)
	}
}
func (e *NotReadyError) Unwrap() error { return e.Err }

func (a *Applier) applyBox(ctx context.Context, image string, bp reconcile.BoxPlan) error {
	if !a.Held[bp.Name] {
		lock, err := statedir.LockBox(a.Config.Path, bp.Name, "boxes apply")
		if err != nil {
			return err
		}
		defer lock.Unlock()
	}

	eng := a.Engines[bp.Host]
	if eng == nil {
		return fmt.Errorf("no engine for %s", reconcile.HostLabel(bp.Host))
	}
	if bp.Action == reconcile.Delete {
		return a.delete(ctx, eng, bp)
	}
	if bp.Action == reconcile.Move {
		return a.move(ctx, image, bp)
	}
	if bp.Action == reconcile.Stop {
		return a.stop(ctx, eng, bp)
	}
	return a.up(ctx, eng, image, bp)
}

// up creates, recreates or starts box bp on engine, seeds a new one from
// its archive, and starts it when its state says so.
func (a *Applier) up(ctx context.Context, eng engine.Lifecycle, image string, bp reconcile.BoxPlan) error {
	box, ok := a.Config.Box(bp.Name)
	if !ok {
		return fmt.Errorf("%s is not declared in boxes.yaml: %w", bp.Name, ErrUndeclared)
	}
	seeder, err := a.seederOf(bp)
	if err != nil {
		return err
	}
	seed := seeder != nil
	restores := statedir.Beside(a.Config.Path).Restores()
	if seed {
		// Recorded before anything is created: a seed cut short at any
		// point is seen by the next plan, and done again.
		if err := restores.Begin(statedir.Restoring{Box: bp.Name, Host: bp.Host, Archive: bp.Restore, From: bp.From}); err != nil {
			return err
		}
	}
	token, err := a.token(bp, box)
	if err != nil {
		return err
	}
	project, err := a.project(box, image, token, bp)
	if err != nil {
		return err
	}

	source := bp.From
	if bp.Restore != "" {
		source = bp.Restore
	}
	if p, ok := seeder.(Preparer); ok {
		p.Prepare(ctx, bp.Host, bp.Name, source, image)
	}
	var prev engine.Previous
	switch bp.Action {
	case reconcile.Create:
		if err := a.create(ctx, eng, bp, project); err != nil {
			return err
		}
	case reconcile.Recreate:
		if prev, err = a.recreate(ctx, eng, bp, project, token); err != nil {
			return err
		}
	case reconcile.Start:
		// Start means start, whatever state boxes.yaml declares: boxes
		// start NAME asks for exactly that, and a plan's start only
		// arises for a box declared running.
		return a.start(ctx, eng, bp, project, token, nil, box.State)
	default:
		return fmt.Errorf("unknown action %q", bp.Action)
	}
	if seed {
		if bp.Restore != "" {
			a.Progress.Step(bp.Name, "restoring /data from "+a.shown(bp.Restore))
		} else {
			a.Progress.Step(bp.Name, "seeding /data from "+reconcile.FromText(bp.From))
		}
		if err := seeder.Seed(ctx, bp.Host, bp.Name, source); err != nil {
			return a.restoreFailed(ctx, eng, bp, err)
		}
	}
	// The plan's state is the one to reach; boxes.yaml's when it has none.
	state := bp.State
	if state == "" {
		state = box.State
	}
	// A seeded box starts once whatever its state, so that hb init runs
	// on the restored data; a stopped one is stopped again after.
	if state != spec.Running && !seed {
		return nil
	}
	err = a.start(ctx, eng, bp, project, token, seeder, state)
	if err != nil && bp.Action == reconcile.Recreate {
		return a.putBack(ctx, eng, bp, prev, token, err)
	}
	return err
}

// seederOf is what seeds box bp when its create or recreate does: the
// Seeder for its archive, the Forker for its from:; nil when nothing does.
func (a *Applier) seederOf(bp reconcile.BoxPlan) (Seeder, error) {
	if bp.Action != reconcile.Create && bp.Action != reconcile.Recreate {
		return nil, nil
	}
	switch {
	case bp.Restore != "" && a.Seeder == nil:
		return nil, fmt.Errorf("restore: nothing here can read %s", a.shown(bp.Restore))
	case bp.Restore != "":
		return a.Seeder, nil
	case bp.From != "" && a.Forker == nil:
		return nil, fmt.Errorf("from: %s: nothing here can copy it", bp.From)
	case bp.From != "":
		return a.Forker, nil
	}
	return nil, nil
}

// stop stops box bp, thawed first: a box stopped quiesced would wait for a
// resume when it next starts. Should the thaw fail, the record stays and
// the start after thaws it.
func (a *Applier) stop(ctx context.Context, eng engine.Lifecycle, bp reconcile.BoxPlan) error {
	if err := a.thaw(ctx, bp); err != nil {
		a.Progress.Step(bp.Name, err.Error()+"; the next start resumes it")
	}
	a.Progress.Step(bp.Name, "stopping")
	return eng.Stop(ctx, compose.ProjectName(bp.Name))
}

// start starts the box, waits for its executor, finishes a seeded box's
// restore, waits for the agent's hb init, and stops the box again when it
// is declared stopped.
func (a *Applier) start(ctx context.Context, eng engine.Lifecycle, bp reconcile.BoxPlan, project *types.Project, token string, seeder Seeder, state spec.State) error {
	seed := seeder != nil
	a.Progress.Step(bp.Name, "starting")
	if err := eng.Start(ctx, project); err != nil {
		// Containers this apply made anew can be made again; a seeded
		// box's hold the restore being checked.
		if !raced(err) || (bp.Action != reconcile.Create && bp.Action != reconcile.Recreate) || seed {
			return err
		}
		if err := a.remake(ctx, eng, bp, project, err); err != nil {
			return err
		}
		a.Progress.Step(bp.Name, "starting")
		if err := eng.Start(ctx, project); err != nil {
			return err
		}
	}
	a.Progress.Step(bp.Name, "waiting for executor")
	// hb init and the gate are waited for beside the executor, unless the
	// agent must first be resumed (a seeded box's restore, a box a save
	// left frozen): the wait is then the longest of the three, not the
	// executor's and then hb init's. The checks are the same ones.
	var inited func() error
	if !seed && !a.mayBeFrozen(bp) {
		var abandon func()
		inited, abandon = waitBeside(ctx, func(ctx context.Context) error { return eng.WaitInit(ctx, bp.Name) })
		defer abandon()
	}
	url, err := eng.WaitReady(ctx, bp.Name, token)
	if err != nil {
		return err
	}
	if seed {
		if bp.Restore != "" {
			a.Progress.Step(bp.Name, "resuming the restored box (hb init)")
		}
		if err := seeder.Finish(ctx, bp.Host, bp.Name); err != nil {
			return err
		}
		if err := statedir.Beside(a.Config.Path).Restores().Done(bp.Name); err != nil {
			return err
		}
	} else if err := a.thaw(ctx, bp); err != nil {
		return err
	}
	// Ready means both containers: the agent must have finished hb init
	// (and not be restarting) as well as the executor answering.
	a.Progress.Step(bp.Name, "waiting for the agent's hb init")
	if inited == nil {
		inited = func() error { return eng.WaitInit(ctx, bp.Name) }
	}
	if err := inited(); err != nil {
		return err
	}
	if seed && state != spec.Running {
		a.Progress.Step(bp.Name, "stopping (declared stopped)")
		return eng.Stop(ctx, compose.ProjectName(bp.Name))
	}
	a.Progress.Step(bp.Name, "ready at "+url)
	return nil
}

// waitBeside starts wait in the background: result returns its error
// once it is done; abandon, once the caller no longer wants it, cancels it
// and returns once it has ended (no request of it outlives the caller's
// step).
func waitBeside(ctx context.Context, wait func(context.Context) error) (result func() error, abandon func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- wait(ctx) }()
	var err error
	var once sync.Once
	get := func() error {
		once.Do(func() { err = <-done })
		return err
	}
	return get, func() {
		cancel()
		get()
	}
}

// mayBeFrozen reports whether box bp may be frozen by a save that died,
// so that thaw has it resumed: its record is there (or cannot be read),
// or the plan found it frozen.
func (a *Applier) mayBeFrozen(bp reconcile.BoxPlan) bool {
	if a.Thawer == nil {
		return false
	}
	_, found, err := statedir.Beside(a.Config.Path).Freezes().Get(bp.Name)
	return found || err != nil || reconcile.HasKind(bp.Reasons, "frozen")
}

// thaw resumes a box a save that died left frozen: found so by the plan,
// or since (a box stopped then is frozen again, quiesced, once started).
func (a *Applier) thaw(ctx context.Context, bp reconcile.BoxPlan) error {
	if a.Thawer == nil {
		return nil
	}
	rec, found, err := statedir.Beside(a.Config.Path).Freezes().Get(bp.Name)
	// A bad record is no reason to leave the box frozen: the thaw takes it
	// (Freezes.TakeStale), and resuming a box that is not frozen does
	// nothing. A plan refuses it; a start (no plan) resumes the box.
	var bad *statedir.BadRecordError
	if err != nil && !errors.As(err, &bad) {
		return err
	}
	switch {
	case bad != nil:
		a.Progress.Step(bp.Name, fmt.Sprintf("resuming the box: a save cut short may have left it frozen, and %s cannot be used", bad.Path))
	case found && !rec.Held, reconcile.HasKind(bp.Reasons, "frozen"):
		a.Progress.Step(bp.Name, "resuming the box a save cut short left frozen")
	default:
		return nil
	}
	if err := a.Thawer.Thaw(ctx, bp.Host, bp.Name); err != nil {
		return fmt.Errorf("resuming: %w", err)
	}
	return nil
}

// project is box's compose project as the applier makes it.
func (a *Applier) project(box spec.Box, image, token string, bp reconcile.BoxPlan) (*types.Project, error) {
	return compose.Project(compose.Input{
		Box:        box,
		Image:      image,
		Token:      token,
		HostPort:   bp.HostPort,
		WorkDir:    filepath.Dir(a.Config.Path),
		ConfigFile: a.Config.Path,
		Door:       a.Doors[box.Name],
	})
}
