package workspace

import (
	"context"
	"fmt"
	"time"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/doctor"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/statedir"
)

// NoResourcesError is a box a command works on that has nothing on its host.
type NoResourcesError struct{ Box, Host string }

func (e *NoResourcesError) Error() string {
	return fmt.Sprintf("box %s has no resources on %s", e.Box, reconcile.HostLabel(e.Host))
}

// Hint is where to look next.
func (e *NoResourcesError) Hint() string { return "run boxes plan to see what boxes.yaml asks for" }

// LockedBox takes box name's lock as what, before it is observed, then
// observes only the box's host: where the box is and what it has there. A
// box with nothing there is a *NoResourcesError; one that is not this
// fleet's is refused (see ObserveBox).
func (w *Workspace) LockedBox(ctx context.Context, name, what string) (string, engine.Resources, error) {
	return w.lockedBox(ctx, name, what, w.ObserveBox)
}

// LockedRemoval is LockedBox for rm, which alone reaches a box of no fleet.
// A leased pool box is refused: release ends its lease, and resets it.
func (w *Workspace) LockedRemoval(ctx context.Context, name string) (string, engine.Resources, error) {
	host, r, err := w.lockedBox(ctx, name, "boxes rm", w.ObserveRemoval)
	if err != nil {
		return host, r, err
	}
	if l := w.Observed[host].Leases(w.Config.Fleet)[name]; l.Held() {
		held := "being reset"
		if l.Claim != nil {
			held = fmt.Sprintf("leased by %q until %s", l.Claim.Holder, l.Expires().UTC().Format(time.RFC3339))
		}
		return "", engine.Resources{}, hint.Wrap(fmt.Errorf("%s is %s; nothing was changed", name, held),
			"boxes release %s ends the lease and resets the box", name)
	}
	return host, r, nil
}

func (w *Workspace) lockedBox(ctx context.Context, name, what string, observe func(context.Context, string) (string, engine.Resources, error)) (string, engine.Resources, error) {
	if err := w.LockBox(name, what); err != nil {
		return "", engine.Resources{}, err
	}
	host, r, err := observe(ctx, name)
	if err != nil {
		return "", engine.Resources{}, err
	}
	if r.Empty() {
		return "", engine.Resources{}, &NoResourcesError{Box: name, Host: host}
	}
	return host, r, nil
}

// StartPlan starts box name's containers r as they are, on the image they
// run: boxes.lock need not have one.
func (w *Workspace) StartPlan(host, name string, r engine.Resources) (*reconcile.Plan, error) {
	if _, ok := w.Config.Box(name); !ok {
		return nil, w.Undeclared(name)
	}
	agent, ok := r.Container(compose.AgentService)
	if !ok {
		return nil, &NoContainerError{Box: name, Service: compose.AgentService}
	}
	return reconcile.StartPlan(host, name, agent.Image), nil
}

// StopPlan stops box name on host as it is; r is not needed.
func (w *Workspace) StopPlan(host, name string, _ engine.Resources) (*reconcile.Plan, error) {
	return reconcile.StopPlan(host, name), nil
}

// Removal is what deleting box name, r on host, does: its result, with the
// newest backup left of it, the snapshots it keeps and whether boxes.yaml
// still declares it, and the one-box plan that deletes it.
func (w *Workspace) Removal(name, host string, r engine.Resources) (BoxResult, *reconcile.Plan) {
	backup := w.backupOf(name, r)
	_, declared := w.Config.Box(name)
	res := Removed(name, host, r, backup, declared)
	res.NoFleet = w.NoFleet(name, r)
	// rm never deletes a box's snapshots: it names those it leaves.
	if o := w.Observed[host]; o != nil {
		for _, s := range o.SnapshotsOf(name) {
			if s.Fleet == w.Config.Fleet {
				res.SnapshotsKept = append(res.SnapshotsKept, s.Label)
			}
		}
	}
	return res, reconcile.DeletePlan(host, name, r, backup)
}

// BoxContainer takes box name's lock as lockAs when it is not empty,
// observes only the box's host, and finds its container of service (see
// Container) and the host it is on, whose engine it reaches.
func (w *Workspace) BoxContainer(ctx context.Context, name, service string, running bool, lockAs string) (string, engine.Container, error) {
	if lockAs != "" {
		if err := w.LockBox(name, lockAs); err != nil {
			return "", engine.Container{}, err
		}
	}
	if _, _, err := w.ObserveBox(ctx, name); err != nil {
		return "", engine.Container{}, err
	}
	host, c, err := w.Container(name, service, running)
	if err != nil {
		return "", engine.Container{}, err
	}
	if _, err := w.Engine(ctx, host); err != nil {
		return "", engine.Container{}, fmt.Errorf("%s: %w", name, err)
	}
	return host, c, nil
}

// ObserveDoctor observes only box name's host, then checks the box (Doctor).
func (w *Workspace) ObserveDoctor(ctx context.Context, name string) (*doctor.Report, error) {
	if _, _, err := w.ObserveBox(ctx, name); err != nil {
		return nil, err
	}
	return w.Doctor(ctx, name)
}

// Doctor checks box name as w last observed it.
func (w *Workspace) Doctor(ctx context.Context, name string) (*doctor.Report, error) {
	host, _, err := w.Container(name, compose.AgentService, false)
	if err != nil {
		return nil, err
	}
	e, err := w.Engine(ctx, host)
	if err != nil {
		return nil, err
	}
	return w.doctorOn(ctx, host, name, w.Observed[host].Of(name), e), nil
}

// doctorOn checks box name, whose resources on host's engine e are r,
// running the checks inside it: what boxes doctor and a move's check of its
// new copy share, so that both judge a box alike.
func (w *Workspace) doctorOn(ctx context.Context, host, name string, r engine.Resources, e engine.Engine) *doctor.Report {
	b := doctor.Box{Name: name, Host: host, Resources: r, Image: w.Image()}
	if decl, ok := w.Config.Box(name); ok {
		b.Bind, b.Stopped, b.Runtime = decl.Executor.Bind, decl.State == spec.Stopped, decl.Runtime
		b.Door = doorChecks(decl)
		b.Door.Machine = compose.MachineAddresses(e.MachineAddresses())
	}
	b.Token, _, b.TokenErr = w.Tokens.Get(name)
	b.Exposed, _ = w.Tokens.Exposed()
	// A restore record that cannot be read is one of doctor's findings,
	// as a token that cannot be read is.
	rec, ok, err := statedir.Beside(w.Path).Restores().Get(name)
	if ok && rec.Host == host {
		b.Restoring = &rec
	}
	b.RestoringErr = err
	probes := doctor.Probes{Runner: e, Runtime: e.ContainerRuntime}
	if bf, ok := e.(engine.BoxForwarder); ok {
		probes.Forward = func(ctx context.Context) (engine.Forward, error) { return bf.ForwardExecutor(ctx, name) }
		if b.Door != nil {
			b.Door.Cluster = true
		}
	}
	if cp, ok := e.(engine.ControlPlane); ok && b.Door != nil {
		b.Door.ControlPlane = cp.ControlPlaneURL()
	}
	return doctor.Check(ctx, b, probes)
}
