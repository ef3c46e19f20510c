package workspace

import (
	"context"

	"github.com/hermes-box/boxes/doctor"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
)

// Load creates box name from archive file. run runs each one-box plan
// through the applier (Apply, with the caller's progress): first the plan
// LoadPlan makes; then, once the new box is observed and checked by doctor
// (its report told to doctored), the stop of a box declared stopped. The
// result names the archive as messages do.
func (w *Workspace) Load(ctx context.Context, file, name string, run func(*reconcile.Plan) error, doctored func(*doctor.Report)) (BoxResult, error) {
	box, p, err := w.LoadPlan(ctx, file, name)
	if err != nil {
		return BoxResult{}, err
	}
	if err := run(p); err != nil {
		return BoxResult{}, err
	}
	if err := w.Observe(ctx, box.Host); err != nil {
		return BoxResult{}, err
	}
	rep, err := w.Doctor(ctx, name)
	if err != nil {
		return BoxResult{}, err
	}
	doctored(rep)
	res := BoxResult{FormatVersion: ResultFormat, Box: name, Host: box.Host, State: "running", Archive: w.opts.Shown(file), Doctor: rep,
		did: "loaded " + name + " from " + w.opts.Shown(file)}
	if box.State == spec.Stopped {
		if err := run(reconcile.StopPlan(box.Host, name)); err != nil {
			return BoxResult{}, err
		}
		res.State = "stopped"
	}
	return res, nil
}
