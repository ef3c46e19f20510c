package reconcile

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
)

// ImageTransfer brings the locked image to a host that lacks it, before
// any box there is applied: streamed from an engine that has it (that
// engine's image save into this one's image load, no registry), or pulled
// by a registry reference pinned by digest when boxes.lock has one. Either
// way the image ID is checked once it is there.
type ImageTransfer struct {
	Image string `json:"image"`
	To    string `json:"to"`
	// From is the host whose engine streams the image; nil when it is pulled.
	From *string `json:"from,omitempty"`
	// Pull is the reference, pinned by digest, the host pulls; empty when streamed.
	Pull string `json:"pull,omitempty"`
	// Bytes is the image's size on the engines that have it, -1 when unknown.
	Bytes int64 `json:"bytes"`
}

// String is the transfer as plans print it.
func (t ImageTransfer) String() string {
	if t.From == nil {
		return fmt.Sprintf("image %s pulled on %s from %s%s, its ID checked after the pull", ShortID(t.Image), HostName(t.To), t.Pull, t.size())
	}
	return fmt.Sprintf("image %s streamed from %s to %s%s, its ID checked after the load", ShortID(t.Image), HostName(*t.From), HostName(t.To), t.size())
}

// size is " (363.0 MiB)", or nothing when the size is unknown.
func (t ImageTransfer) size() string {
	if t.Bytes < 0 {
		return ""
	}
	return " (" + HumanSize(t.Bytes) + ")"
}

// step is the transfer as progress shows it while it runs.
func (t ImageTransfer) step() string {
	if t.From == nil {
		return fmt.Sprintf("pulling image %s on %s from %s", ShortID(t.Image), HostName(t.To), t.Pull)
	}
	return fmt.Sprintf("streaming image %s from %s to %s%s", ShortID(t.Image), HostName(*t.From), HostName(t.To), t.size())
}

// ImageCarrier brings an image to a host's engine for the applier; each
// method fails unless the host then has exactly image.
type ImageCarrier interface {
	// StreamImage copies image from host from's engine into host to's.
	StreamImage(ctx context.Context, from, to, image string) error
	// PullImage pulls ref, pinned by digest, on host to.
	PullImage(ctx context.Context, to, ref, image string) error
}

var digestRef = regexp.MustCompile(`^[^@\s]+@sha256:[0-9a-f]{64}$`)

// PinnedByDigest reports whether ref is a registry reference pinned by
// digest (NAME@sha256:…), which pulls the same image wherever it is pulled.
func PinnedByDigest(ref string) bool { return digestRef.MatchString(ref) }

// usesImage reports whether applying bp runs containers of the locked
// image on its host.
func usesImage(bp BoxPlan) bool {
	switch bp.Action {
	case Create, Recreate, Start:
		return true
	case Move:
		return bp.Move != nil && (bp.Move.Stage == MoveSave || bp.Move.Stage == MoveRestore)
	}
	return false
}

// imageTransfers are the transfers of the locked image to the hosts of
// boxes that use it and lack it, one per host, in host order.
func imageTransfers(in Input, boxes []BoxPlan) ([]ImageTransfer, error) {
	if in.Image == "" {
		return nil, nil
	}
	needed := map[string]bool{}
	for _, bp := range boxes {
		if o := in.Observed[bp.Host]; o != nil && usesImage(bp) && !o.Images[in.Image] {
			needed[bp.Host] = true
		}
	}
	hosts := make([]string, 0, len(needed))
	for h := range needed {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	var out []ImageTransfer
	src, found := imageSource(in)
	for _, host := range hosts {
		t := ImageTransfer{Image: in.Image, To: host, Bytes: -1}
		if found {
			if n, ok := in.Observed[src].ImageSizes[in.Image]; ok {
				t.Bytes = n
			}
		}
		switch {
		case in.ImageRef != "":
			t.Pull = in.ImageRef
		case found:
			t.From = &src
		default:
			return nil, imageMissing(host, in.Image)
		}
		out = append(out, t)
	}
	return out, nil
}

// ImageTransfers are the transfers a one-box plan's boxes need (a load's):
// the locked image, with boxes.lock's digest-pinned ref if any, brought to
// the hosts of observed that lack it, as NewPlan plans them.
func ImageTransfers(observed map[string]*Observed, image, ref string, boxes []BoxPlan) ([]ImageTransfer, error) {
	return imageTransfers(Input{Observed: observed, Image: image, ImageRef: ref}, boxes)
}

func imageMissing(host, image string) error {
	return fmt.Errorf("%w: %s lacks %s, and no host has it to stream from", ErrImageMissing, HostLabel(host), ShortID(image))
}

// images are a plan's image transfers under way, by host: the boxes of a
// host that use the image wait for its transfer.
type images map[string]*transfer

type transfer struct {
	done chan struct{}
	err  error // set before done is closed
}

// bringImages starts p's image transfers, the hosts in parallel.
func (a *Applier) bringImages(ctx context.Context, p *Plan) images {
	im := images{}
	waiting := map[string][]string{}
	for _, bp := range p.Boxes {
		if usesImage(bp) {
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
			step(t.step())
			if err := a.bring(ctx, t); err != nil {
				tr.err = fmt.Errorf("bringing image %s to %s: %w", ShortID(t.Image), HostLabel(t.To), err)
				return
			}
			step(fmt.Sprintf("image %s is on %s, its ID checked", ShortID(t.Image), HostName(t.To)))
		}()
	}
	return im
}

func (a *Applier) bring(ctx context.Context, t ImageTransfer) error {
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
func (im images) wait(ctx context.Context, bp BoxPlan) error {
	tr, ok := im[bp.Host]
	if !ok || !usesImage(bp) {
		return nil
	}
	select {
	case <-tr.done:
		return tr.err
	case <-ctx.Done():
		return ctx.Err()
	}
}
