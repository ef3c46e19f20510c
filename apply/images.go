package apply

import (
	"context"
	"errors"
	"fmt"

	"github.com/hermes-box/boxes/reconcile"
)

// step is the transfer as progress shows it while it runs.
func transferStep(t reconcile.ImageTransfer) string {
	if t.From == nil {
		return fmt.Sprintf("pulling image %s on %s from %s", reconcile.ShortID(t.Image), reconcile.HostName(t.To), t.Pull)
	}
	return fmt.Sprintf("streaming image %s from %s to %s%s", reconcile.ShortID(t.Image), reconcile.HostName(*t.From), reconcile.HostName(t.To), t.Size())
}

// ImageCarrier brings an image to a host's engine for the applier; each
// method fails unless the host then has exactly image.
type ImageCarrier interface {
	// StreamImage copies image from host from's engine into host to's.
	StreamImage(ctx context.Context, from, to, image string) error
	// PullImage pulls ref, pinned by digest, on host to.
	PullImage(ctx context.Context, to, ref, image string) error
}

type images map[string]*transfer

type transfer struct {
	done chan struct{}
	err  error // set before done is closed
}

// bringImages starts p's image transfers, the hosts in parallel.
func (a *Applier) bringImages(ctx context.Context, p *reconcile.Plan) images {
	im := images{}
	waiting := map[string][]string{}
	for _, bp := range p.Boxes {
		if reconcile.UsesImage(bp) {
			waiting[bp.Host] = append(waiting[bp.Host], bp.Name)
		}
	}
	for _, t := range p.Images {
		tr := &transfer{done: make(chan struct{})}
		im[t.To] = tr
		go func() {
			defer close(tr.done)
			step := func(msg string) {
				for _, box := range waiting[t.To] {
					a.Progress.Step(box, msg)
				}
			}
			step(transferStep(t))
			if err := a.bring(ctx, t); err != nil {
				tr.err = fmt.Errorf("bringing image %s to %s: %w", reconcile.ShortID(t.Image), reconcile.HostLabel(t.To), err)
				return
			}
			step(fmt.Sprintf("image %s is on %s, its ID checked", reconcile.ShortID(t.Image), reconcile.HostName(t.To)))
		}()
	}
	return im
}

func (a *Applier) bring(ctx context.Context, t reconcile.ImageTransfer) error {
	if a.Images == nil {
		return errors.New("nothing here can bring images to other engines")
	}
	if t.From == nil {
		return a.Images.PullImage(ctx, t.To, t.Pull, t.Image)
	}
	return a.Images.StreamImage(ctx, *t.From, t.To, t.Image)
}

// wait returns once the image is on bp's host, if bp needs it there; it
// fails with the transfer's error.
func (im images) wait(ctx context.Context, bp reconcile.BoxPlan) error {
	tr, ok := im[bp.Host]
	if !ok || !reconcile.UsesImage(bp) {
		return nil
	}
	select {
	case <-tr.done:
		return tr.err
	case <-ctx.Done():
		return ctx.Err()
	}
}
