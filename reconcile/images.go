package reconcile

import (
	"fmt"
	"regexp"
	"sort"
	"sync"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/spec"
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
	// Nodes: the host is a Kubernetes cluster, whose nodes pull the
	// reference, by its digest, as they start the boxes.
	Nodes bool `json:"nodes,omitempty"`
}

// String is the transfer as plans print it.
func (t ImageTransfer) String() string {
	if t.From == nil && t.Nodes {
		return fmt.Sprintf("image %s pulled by the nodes of %s from %s%s, by its digest", ShortID(t.Image), HostLabel(t.To), t.Pull, t.Size())
	}
	if t.From == nil {
		return fmt.Sprintf("image %s pulled on %s from %s%s, its ID checked after the pull", ShortID(t.Image), HostName(t.To), t.Pull, t.Size())
	}
	return fmt.Sprintf("image %s streamed from %s to %s%s, its ID checked after the load", ShortID(t.Image), HostName(*t.From), HostName(t.To), t.Size())
}

// size is " (363.0 MiB)", or nothing when the size is unknown.
// Size is the transfer's size as plans show it: " (12 MiB)", or "".
func (t ImageTransfer) Size() string {
	if t.Bytes < 0 {
		return ""
	}
	return " (" + HumanSize(t.Bytes) + ")"
}

// digestRef is compiled on first use: its bounded length makes a long
// program, which every command would pay for.
var digestRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[^@\s]+@sha256:[0-9a-f]{64}$`) })

// PinnedByDigest reports whether ref is a registry reference pinned by
// digest (NAME@sha256:…), which pulls the same image wherever it is pulled.
func PinnedByDigest(ref string) bool { return digestRef().MatchString(ref) }

// usesImage reports whether applying bp runs containers of the locked
// image on its host.
func UsesImage(bp BoxPlan) bool {
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
		if o := in.Observed[bp.Host]; o != nil && UsesImage(bp) && !o.Images[in.Image] {
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
			t.Nodes = onCluster(in, host)
		case onCluster(in, host):
			return nil, unpulled(host, in.Image)
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
func ImageTransfers(observed map[string]*engine.Observed, image, ref string, boxes []BoxPlan) ([]ImageTransfer, error) {
	return imageTransfers(Input{Observed: observed, Image: image, ImageRef: ref}, boxes)
}

// onCluster reports whether host is a Kubernetes cluster (a plan made
// without boxes.yaml, a load's, knows of none).
func onCluster(in Input, host string) bool {
	return in.Config != nil && in.Config.Hosts[host].Kind() == spec.HostKubernetes
}

// unpulled is the refusal of a kubernetes: host for an image boxes.lock
// has no registry reference of: a cluster's nodes get images only from a
// registry.
func unpulled(host, image string) error {
	return hint.Wrap(fmt.Errorf("%w: %s is a Kubernetes cluster, whose nodes pull images from a registry, and boxes.lock has no registry reference of %s", ErrImageMissing, HostLabel(host), ShortID(image)),
		"boxes build --push pushes the image and records its reference with its digest in boxes.lock")
}

func imageMissing(host, image string) error {
	return fmt.Errorf("%w: %s lacks %s, and no host has it to stream from", ErrImageMissing, HostLabel(host), ShortID(image))
}

// images are a plan's image transfers under way, by host: the boxes of a
// host that use the image wait for its transfer.
