package apply

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/statedir"
)

// Mover carries a box's data from one host to another for the applier. Paths
// are absolute.
type Mover interface {
	// Save writes the stopped box's /data on host to archive, encrypted to
	// the age identity in key (made, mode 0600, when missing), reads it back
	// whole, and publishes it; it returns the bytes of data saved.
	Save(ctx context.Context, host, box, archive, key string) (int64, error)
	// Restore restores archive into the created, not yet started box on
	// host, quiesce marker first, so that a restore cut short never runs.
	Restore(ctx context.Context, host, box, archive, key string) error
	// Check compares the restored /data of the box, not yet started, with
	// the archive: the same regular files with the same content hashes. It
	// returns the number of files checked.
	Check(ctx context.Context, host, box, archive, key string) (int, error)
	// Finish ends the quiescence of the started box and waits for hb init.
	Finish(ctx context.Context, host, box string) error
	// Doctor checks the started box as boxes doctor does; an error names
	// what failed.
	Doctor(ctx context.Context, host, box string) error
	// SameEngine reports whether two hosts reach one engine.
	SameEngine(ctx context.Context, a, b string) (bool, error)
}

// ErrSameEngine is a move between two host entries that reach one engine:
// deleting the old copy would delete the only one.
var ErrSameEngine = errors.New("both hosts are one engine")

// move runs a move from the stage the plan found it at: save on the old
// host, create, restore, check and doctor on the new one, and only then,
// when the delete is confirmed, delete the old copy. Each step is recorded
// in .boxes/moves before the next begins, so that a move cut short resumes.
func (a *Applier) move(ctx context.Context, image string, bp reconcile.BoxPlan) error {
	m := bp.Move
	if m == nil {
		return errors.New("move without its details")
	}
	if a.Mover == nil {
		return errors.New("nothing here can move boxes between hosts")
	}
	from, to := a.Engines[m.From], a.Engines[m.To]
	if from == nil || to == nil {
		return fmt.Errorf("no engine for %s or %s", reconcile.HostLabel(m.From), reconcile.HostLabel(m.To))
	}
	box, ok := a.Config.Box(bp.Name)
	if !ok {
		return fmt.Errorf("%s is not declared in boxes.yaml: %w", bp.Name, ErrUndeclared)
	}
	same, err := a.Mover.SameEngine(ctx, m.From, m.To)
	if err != nil {
		return err
	}
	if same {
		return fmt.Errorf("moving %s from %s to %s: %w; nothing was changed", bp.Name, reconcile.HostLabel(m.From), reconcile.HostLabel(m.To), ErrSameEngine)
	}
	dir := filepath.Dir(a.Config.Path)
	abs := func(p string) string { return filepath.Join(dir, p) }
	moves := statedir.Beside(a.Config.Path).Moves()
	rec, found, err := moves.Get(bp.Name)
	if err != nil {
		return err
	}
	if m.Stage == reconcile.MoveCancel {
		if !found || rec.From != m.To || rec.To != m.From || rec.Verified {
			return fmt.Errorf("the record of %s's move in .boxes/moves is gone or changed since the plan", bp.Name)
		}
		return a.cancelMove(ctx, image, bp, box, moves)
	}
	if m.Stage != reconcile.MoveSave && (!found || rec.From != m.From || rec.To != m.To) {
		return fmt.Errorf("the record of %s's move in .boxes/moves is gone or changed since the plan", bp.Name)
	}
	step := func(msg string) { a.Progress.Step(bp.Name, msg) }

	if m.Stage == reconcile.MoveSave {
		if rec, err = a.moveSave(ctx, bp, from, moves, rec, found, abs); err != nil {
			return err
		}
	}

	if m.Stage == reconcile.MoveSave || m.Stage == reconcile.MoveRestore {
		if err := a.moveIn(ctx, image, bp, box, rec, abs); err != nil {
			return err
		}
		rec.Verified = true
		if err := moves.Put(rec); err != nil {
			return err
		}
	}

	if !a.ConfirmedDeletes[bp.Name] {
		step(fmt.Sprintf("moved to %s and verified; the old copy stays, stopped, on %s until you confirm its delete (boxes apply --confirm-delete %s)", reconcile.HostName(m.To), reconcile.HostName(m.From), bp.Name))
		return nil
	}
	if m.Stage == reconcile.MoveDeleteOld && m.OldRunning {
		return fmt.Errorf("the old copy on %s runs again since the move saved it, so it may hold changes the new copy lacks; it was not deleted (stop it, or save it first)", reconcile.HostLabel(m.From))
	}
	step("deleting the old copy on " + reconcile.HostName(m.From))
	if err := removeDeletion(ctx, from, m.Old, step); err != nil {
		return fmt.Errorf("deleting the old copy on %s: %w", reconcile.HostLabel(m.From), err)
	}
	if err := moves.Remove(bp.Name); err != nil {
		return err
	}
	step(fmt.Sprintf("moved to %s; the old copy is deleted, the archive kept at %s", reconcile.HostName(m.To), rec.Archive))
	return nil
}

// moveSave is a move's first stage: record the move (a save cut short
// before leaves a key that encrypted nothing published: it goes), stop the
// box on its old host and save its /data to the recorded archive.
func (a *Applier) moveSave(ctx context.Context, bp reconcile.BoxPlan, from engine.Lifecycle, moves statedir.Moves, rec statedir.MoveRecord, found bool, abs func(string) string) (statedir.MoveRecord, error) {
	m := bp.Move
	step := func(msg string) { a.Progress.Step(bp.Name, msg) }
	if found && !rec.Saved && rec.Key != "" {
		_ = os.Remove(abs(rec.Key))
	}
	stamp := time.Now().UTC().Format("20060102-150405")
	rec = statedir.MoveRecord{Box: bp.Name, From: m.From, To: m.To, Started: time.Now().UTC(),
		Archive: filepath.Join("backups", bp.Name+"-"+stamp+archive.Ext),
		Key:     statedir.MoveKey(bp.Name, stamp)}
	if err := moves.Put(rec); err != nil {
		return rec, err
	}
	step("stopping the box on " + reconcile.HostName(m.From) + " so that nothing writes to /data while it is saved")
	if err := from.Stop(ctx, compose.ProjectName(bp.Name)); err != nil {
		return rec, err
	}
	step("saving /data on " + reconcile.HostName(m.From) + " to " + rec.Archive)
	n, err := a.Mover.Save(ctx, m.From, bp.Name, abs(rec.Archive), abs(rec.Key))
	if err != nil {
		return rec, fmt.Errorf("saving on %s: %w", reconcile.HostLabel(m.From), err)
	}
	rec.Saved, rec.Bytes = true, n
	return rec, moves.Put(rec)
}

// cancelMove ends a move that boxes.yaml put back before its new copy was
// verified: that copy goes, and the original, on the declared host, is
// started again when it is declared running.
func (a *Applier) cancelMove(ctx context.Context, image string, bp reconcile.BoxPlan, box spec.Box, moves statedir.Moves) error {
	m := bp.Move
	step := func(msg string) { a.Progress.Step(bp.Name, msg) }
	step("removing the unverified copy on " + reconcile.HostName(m.From) + " left by the move that was put back")
	if err := removeDeletion(ctx, a.Engines[m.From], m.Unverified, step); err != nil {
		return err
	}
	if err := moves.Remove(bp.Name); err != nil {
		return err
	}
	if box.State != spec.Running {
		return nil
	}
	token, ok, err := a.Tokens.Get(bp.Name)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("box %s: %w", bp.Name, ErrNoToken)
	}
	project, err := a.project(box, image, token, bp)
	if err != nil {
		return err
	}
	return a.start(ctx, a.Engines[m.To], bp, project, token, nil, box.State)
}

// moveIn makes the box on the new host from the move's archive and proves
// it: restored data checked against the archive's hashes, ready, doctor.
func (a *Applier) moveIn(ctx context.Context, image string, bp reconcile.BoxPlan, box spec.Box, rec statedir.MoveRecord, abs func(string) string) error {
	m := bp.Move
	to := a.Engines[m.To]
	step := func(msg string) { a.Progress.Step(bp.Name, msg) }
	if m.Unverified != nil {
		step("removing the unverified copy on " + reconcile.HostName(m.To) + " left by the interrupted move")
		if err := removeDeletion(ctx, to, m.Unverified, step); err != nil {
			return err
		}
	}
	// The box keeps its token: it is the same box, and the old copy stays stopped.
	token, ok, err := a.Tokens.Get(bp.Name)
	if err != nil {
		return err
	}
	if !ok {
		if token, err = statedir.NewToken(); err != nil {
			return err
		}
		if err := a.Tokens.Put(bp.Name, token); err != nil {
			return err
		}
	}
	project, err := a.project(box, image, token, bp)
	if err != nil {
		return err
	}
	step("creating the box on " + reconcile.HostName(m.To))
	if err := to.Create(ctx, project, false); err != nil {
		return err
	}
	step("restoring /data on " + reconcile.HostName(m.To) + " from " + rec.Archive)
	if err := a.Mover.Restore(ctx, m.To, bp.Name, abs(rec.Archive), abs(rec.Key)); err != nil {
		return fmt.Errorf("restoring from %s: %w", rec.Archive, err)
	}
	step("checking the restored data against the archive's content hashes")
	files, err := a.Mover.Check(ctx, m.To, bp.Name, abs(rec.Archive), abs(rec.Key))
	if err != nil {
		return err
	}
	step("starting on " + reconcile.HostName(m.To))
	if err := to.Start(ctx, project); err != nil {
		return err
	}
	step("waiting for executor")
	url, err := to.WaitReady(ctx, bp.Name, token)
	if err != nil {
		return err
	}
	step("resuming the restored box (hb init)")
	if err := a.Mover.Finish(ctx, m.To, bp.Name); err != nil {
		return err
	}
	step("running doctor")
	if err := a.Mover.Doctor(ctx, m.To, bp.Name); err != nil {
		return fmt.Errorf("doctor on the moved box: %w", err)
	}
	if box.State != spec.Running {
		step("stopping (declared stopped)")
		if err := to.Stop(ctx, compose.ProjectName(bp.Name)); err != nil {
			return err
		}
	}
	step(fmt.Sprintf("verified on %s at %s: %d files match the archive, doctor ok", reconcile.HostName(m.To), url, files))
	return nil
}

// removeDeletion removes exactly the listed resources of one copy of a box:
// containers, then networks, then volumes. The token stays: it is the box's.
func removeDeletion(ctx context.Context, e engine.Lifecycle, d *reconcile.Deletion, step func(string)) error {
	if d == nil {
		return nil
	}
	for _, c := range d.Containers {
		step("removing container " + c.Name)
		if err := e.RemoveContainer(ctx, c.ID); err != nil {
			return fmt.Errorf("removing container %s: %w", c.Name, err)
		}
	}
	for _, n := range d.Networks {
		step("removing network " + n.Name)
		if err := e.RemoveNetwork(ctx, n.ID); err != nil {
			return fmt.Errorf("removing network %s: %w", n.Name, err)
		}
	}
	for _, v := range d.Volumes {
		step("removing volume " + v.Name)
		if err := e.RemoveVolume(ctx, v.Name); err != nil {
			return fmt.Errorf("removing volume %s: %w", v.Name, err)
		}
	}
	return nil
}
