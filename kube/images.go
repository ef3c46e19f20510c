package kube

import (
	"context"
	"fmt"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"
	corev1 "k8s.io/api/core/v1"
)

// A cluster's nodes pull a box's image from its registry, by the digest
// boxes.lock records (boxes build --push): boxes cannot see what images a
// node holds, so a plan brings the image to a kubernetes: host by that
// reference every time it makes a box there (PullImage), and a lock
// without one is refused for such a host.

// PullImage records ref as where the nodes get image: the reference the
// Sandboxes made next run. ref is pinned by digest, so what runs is the
// image the lock names.
func (e *Engine) PullImage(ctx context.Context, ref, image string) error {
	if !strings.Contains(ref, "@sha256:") {
		return e.fail(fmt.Errorf("image %s: a cluster pulls by digest, and %s has none", image, ref), "boxes build --push records the image's registry reference with its digest")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.refs[image] = ref
	return nil
}

// podImage is what a pod runs for image: its registry reference when
// known, else the ID itself, which a node has only if it was given it
// (a test cluster's images are imported into its nodes).
func (e *Engine) podImage(image string) (string, corev1.PullPolicy) {
	e.mu.Lock()
	ref, ok := e.refs[image]
	e.mu.Unlock()
	if ok {
		return ref, corev1.PullIfNotPresent
	}
	return image, corev1.PullNever
}

// withImages is o with each Sandbox's image as the cluster reaches it.
func (e *Engine) withImages(o *objects, p *types.Project) {
	for _, sb := range o.sandboxes {
		c := &sb.Spec.PodTemplate.Spec.Containers[0]
		c.Image, c.ImagePullPolicy = e.podImage(c.Image)
	}
}
