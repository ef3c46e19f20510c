package apply

import (
	"context"
	"errors"
	"fmt"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/statedir"
)

// delete removes exactly the resources the plan listed (see remove), then
// the box's restore record and token.
func (a *Applier) delete(ctx context.Context, eng engine.Lifecycle, bp reconcile.BoxPlan) error {
	d := bp.Delete
	if d == nil {
		return errors.New("delete without a list of resources")
	}
	if err := a.remove(ctx, eng, bp.Name, d); err != nil {
		return err
	}
	if err := statedir.Beside(a.Config.Path).Restores().Done(bp.Name); err != nil {
		return err
	}
	return a.Tokens.Remove(bp.Name)
}

// remove removes exactly the resources of box that d lists: containers
// first, then the network, then the volumes.
func (a *Applier) remove(ctx context.Context, eng engine.Lifecycle, box string, d *reconcile.Deletion) error {
	for _, c := range d.Containers {
		a.Progress.Step(box, "removing container "+c.Name)
		if err := eng.RemoveContainer(ctx, c.ID); err != nil {
			return fmt.Errorf("removing container %s: %w", c.Name, err)
		}
	}
	for _, n := range d.Networks {
		a.Progress.Step(box, "removing network "+n.Name)
		if err := eng.RemoveNetwork(ctx, n.ID); err != nil {
			return fmt.Errorf("removing network %s: %w", n.Name, err)
		}
	}
	for _, v := range d.Volumes {
		a.Progress.Step(box, "removing volume "+v.Name)
		if err := eng.RemoveVolume(ctx, v.Name); err != nil {
			return fmt.Errorf("removing volume %s: %w", v.Name, err)
		}
	}
	return nil
}
