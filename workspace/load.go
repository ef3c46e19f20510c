package workspace

import (
	"context"
	"errors"
	"fmt"

	"github.com/hermes-box/boxes/doctor"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/statedir"
)

// Load creates box name from archive file. It applies each one-box plan
// with o (see ApplyOne): first the plan LoadPlan makes;
// then, once the new box is observed and checked by doctor (its report
// told to doctored), the stop of a box declared stopped. The result names
// the archive as messages do.
func (w *Workspace) Load(ctx context.Context, file, name string, o ApplyOptions, doctored func(*doctor.Report)) (res BoxResult, err error) {
	created := false
	defer func() {
		if err != nil && ctx.Err() != nil {
			err = w.loadInterrupted(file, name, created, err)
		}
	}()
	box, p, err := w.LoadPlan(ctx, file, name)
	if err != nil {
		return BoxResult{}, err
	}
	created = true
	if err := w.ApplyOne(ctx, p, o); err != nil {
		return BoxResult{}, err
	}
	if err := w.Observe(ctx, box.Host); err != nil {
		return BoxResult{}, err
	}
	rep, err := w.Doctor(ctx, name)
	if err == nil {
		// A doctor cut short by Ctrl-C says nothing of the box: its
		// checks fail on the cancelled requests.
		err = ctx.Err()
	}
	if err != nil {
		return BoxResult{}, err
	}
	doctored(rep)
	res = BoxResult{FormatVersion: ResultFormat, Box: name, Host: box.Host, State: "running", Archive: w.opts.Shown(file), Doctor: rep,
		did: "loaded " + name + " from " + w.opts.Shown(file)}
	if box.State == spec.Stopped {
		if err := w.ApplyOne(ctx, reconcile.StopPlan(box.Host, name), o); err != nil {
			return BoxResult{}, err
		}
		res.State = "stopped"
	}
	return res, nil
}

// InterruptedLoadError is a load cut short by Ctrl-C or SIGTERM: what it
// left, and what the next command does about it.
type InterruptedLoadError struct {
	Box, Archive string
	// Stage is how far the load got: "checking" (nothing was created),
	// "restoring" (a restore record is left), or "finishing" (the box was
	// restored; doctor or the stop of a box declared stopped did not run).
	Stage string
	Err   error
}

func (e *InterruptedLoadError) Error() string {
	switch e.Stage {
	case "checking":
		return fmt.Sprintf("load of %s interrupted before anything was created", e.Box)
	case "restoring":
		return fmt.Sprintf("load of %s interrupted: its restore from %s is incomplete, and boxes ls and plan show it so", e.Box, e.Archive)
	}
	return fmt.Sprintf("load of %s interrupted after its /data was restored", e.Box)
}

func (e *InterruptedLoadError) Unwrap() error { return e.Err }

// HintLines say what the next command does.
func (e *InterruptedLoadError) HintLines() []string {
	switch e.Stage {
	case "checking":
		return []string{fmt.Sprintf("boxes load %s %s starts again", e.Archive, e.Box)}
	case "restoring":
		return []string{fmt.Sprintf("boxes load %s %s finishes it from the same archive, and so does boxes apply; it never runs on part of an archive", e.Archive, e.Box)}
	}
	return []string{fmt.Sprintf("boxes doctor %s checks it; boxes plan shows anything left to do", e.Box)}
}

// loadInterrupted is the error of a load of file into box name cut short;
// created says whether the load had begun to change anything.
func (w *Workspace) loadInterrupted(file, name string, created bool, err error) error {
	e := &InterruptedLoadError{Box: name, Archive: w.opts.Shown(file), Stage: "checking", Err: err}
	if created {
		e.Stage = "finishing"
		_, ok, rerr := statedir.Beside(w.Path).Restores().Get(name)
		if ok || rerr != nil {
			e.Stage = "restoring"
		}
		if rerr != nil {
			// The record is there, but the next load or apply will
			// refuse it until it is dealt with: say so too.
			return errors.Join(e, rerr)
		}
	}
	return e
}
