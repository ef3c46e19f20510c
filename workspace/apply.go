package workspace

import (
	"context"
	"fmt"

	"filippo.io/age"

	"github.com/hermes-box/boxes/apply"
	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/reconcile"
)

// ApplyOptions tune Apply.
type ApplyOptions struct {
	Parallelism int
	// Progress makes the display of plan p's progress as p's apply begins,
	// before any archive is checked; nil shows none.
	Progress func(p *reconcile.Plan) apply.Progress
	// Identities decrypt the archives p restores boxes from: asked once,
	// for the first, and only when p restores one. Every such archive is
	// checked whole before anything changes, and told to Checked.
	Identities func(path string) ([]age.Identity, error)
	Checked    func(backup.Checked)
	// Init bounds the wait for a restored or moved box's hb init.
	Init hb.Wait
	// Writer names the program in the archives of moves ("boxes v1.2.3").
	Writer string
	// Held names boxes whose lock the caller already holds.
	Held map[string]bool
	// ConfirmedDeletes names the moved boxes whose old copy may be deleted.
	ConfirmedDeletes map[string]bool

	// resetting is the leased pool box a reset deletes (see guardPool).
	resetting string
}

// PartialError is a plan of several boxes that failed for some of them
// while the others were done.
type PartialError struct {
	Err           error // the boxes' errors, joined
	Failed, Boxes int
}

func (e *PartialError) Error() string {
	if e.Failed == e.Boxes {
		return fmt.Sprintf("%s\napply failed for all %d boxes", e.Err, e.Boxes)
	}
	return fmt.Sprintf("%s\napply failed for %d of %d boxes; the others were done", e.Err, e.Failed, e.Boxes)
}

// Hint is where to look next.
func (e *PartialError) Hint() string    { return "boxes plan shows what is left" }
func (e *PartialError) Unwrap() []error { return []error{e.Err} }

// Apply runs p through the one applier: apply's plans and the one-box plans
// of load, rm, start and stop alike. The archives p restores are checked
// first, then every engine p changes is reached, and secrets made readable
// by others get their modes back before anything else. Moves are carried
// between w's engines, and the image to the hosts that lack it.
func (w *Workspace) Apply(ctx context.Context, p *reconcile.Plan, o ApplyOptions) error {
	p, unguard, err := w.guardPool(ctx, p, o.resetting)
	if err != nil {
		return err
	}
	defer unguard()
	var pr apply.Progress = quiet{}
	if o.Progress != nil {
		pr = o.Progress(p)
	}
	seeder, err := w.restores(ctx, p, o, pr)
	if err != nil {
		return err
	}
	if err := w.reachChanged(ctx, p); err != nil {
		return err
	}
	fixed, err := w.Tokens.Restrict()
	if err != nil {
		return err
	}
	for _, e := range fixed {
		w.opts.Warn("%s was readable by others; made it %04o", e.Path, e.Want)
	}
	changing := map[string]bool{}
	for _, b := range p.Boxes {
		if b.Action != reconcile.Delete && b.Action != reconcile.NoOp {
			changing[b.Name] = true
		}
	}
	doors := map[string]compose.Door{}
	if len(changing) > 0 {
		var unread map[string]error
		doors, unread = w.Doors(ctx, changing)
		if err := gateErrors(p, unread); err != nil {
			return err
		}
	}
	applier := &apply.Applier{Config: w.Config, Engines: w.Engines(), Tokens: w.Tokens, Parallelism: o.Parallelism, Progress: pr, Held: o.Held,
		Mover: w.mover(o, pr), ConfirmedDeletes: o.ConfirmedDeletes, Shown: w.opts.Shown, Images: imageCarrier{w}, Doors: doors}
	if seeder != nil {
		applier.Seeder = seeder
	}
	applier.Forker = &forker{w: w, image: p.Image, init: o.Init, step: pr.Step}
	// A box a save that died left frozen is thawed before anything else is done to it.
	applier.Thawer = backup.Thawer{Config: w.Path, Hosts: hosts{w}}
	err = applier.Apply(ctx, p)
	if failed, ok := err.(interface{ Unwrap() []error }); ok && len(p.Boxes) > 1 {
		return &PartialError{Err: err, Failed: len(failed.Unwrap()), Boxes: len(p.Boxes) - p.Summary().NoOp}
	}
	return err
}

// quiet is the progress of an apply that shows none.
type quiet struct{}

func (quiet) Step(string, string) {}
func (quiet) Done(string, error)  {}

// ApplyOne is Apply for the one-box plans of load, rm, start and stop,
// whose box's lock the caller holds.
func (w *Workspace) ApplyOne(ctx context.Context, p *reconcile.Plan, o ApplyOptions) error {
	o.Held = p.Held()
	return w.Apply(ctx, p, o)
}

// reachChanged reaches the engine of every host p changes, or brings the
// image from or to, before anything is done.
func (w *Workspace) reachChanged(ctx context.Context, p *reconcile.Plan) error {
	for _, t := range p.Images {
		for _, host := range []*string{&t.To, t.From} {
			if host == nil {
				continue
			}
			if _, err := w.Engine(ctx, *host); err != nil {
				return err
			}
		}
	}
	for _, b := range p.Boxes {
		if b.Action != reconcile.NoOp {
			if _, err := w.Engine(ctx, b.Host); err != nil {
				return err
			}
			if b.Move != nil {
				if _, err := w.Engine(ctx, b.Move.From); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// SavedPlan reads the plan saved at path (shown as display), and checks it
// is still what a plan with its options makes now.
func (w *Workspace) SavedPlan(ctx context.Context, path, display string) (*reconcile.Plan, error) {
	saved, err := reconcile.ReadSaved(path, display)
	if err != nil {
		return nil, err
	}
	now, err := w.Plan(ctx, saved.Options)
	if err != nil {
		return nil, err
	}
	if err := saved.Fresh(display, w.Files, w.Config.Fleet, w.Observed, now); err != nil {
		return nil, err
	}
	return saved.Plan, nil
}

// PlanToApply takes the apply lock as what, then makes the plan apply
// carries out: the one saved at path (shown as display) when path is not
// empty, checked to be still what a plan with its options makes now, else
// a new plan with opts. Close releases the lock.
func (w *Workspace) PlanToApply(ctx context.Context, what, path, display string, opts reconcile.PlanOptions) (*reconcile.Plan, error) {
	if err := w.LockApply(what); err != nil {
		return nil, err
	}
	if path != "" {
		return w.SavedPlan(ctx, path, display)
	}
	return w.Plan(ctx, opts)
}

// WriteSaved saves p, made with opts, to path with the fingerprint of what
// it was made from, for SavedPlan to check.
func (w *Workspace) WriteSaved(path string, opts reconcile.PlanOptions, p *reconcile.Plan) error {
	return reconcile.WriteSaved(path, w.Fingerprint(p), opts, p)
}

// imageCarrier brings images to w's hosts for the applier.
type imageCarrier struct{ w *Workspace }

// StreamImage copies image from host from's engine into host to's, without
// a registry.
func (c imageCarrier) StreamImage(ctx context.Context, from, to, image string) error {
	src, err := c.w.Engine(ctx, from)
	if err != nil {
		return err
	}
	dst, err := c.w.Engine(ctx, to)
	if err != nil {
		return err
	}
	id, r, err := src.SaveImage(ctx, image)
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = dst.LoadImage(ctx, image, id, r)
	return err
}

// PullImage pulls ref, pinned by digest, on host to.
func (c imageCarrier) PullImage(ctx context.Context, to, ref, image string) error {
	dst, err := c.w.Engine(ctx, to)
	if err != nil {
		return err
	}
	return dst.PullImage(ctx, ref, image)
}
