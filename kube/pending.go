package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"

	"github.com/hermes-box/boxes/engine"
)

// ErrNotYet is what a kubernetes: host answers to the parts of the engine
// contract this boxes does not carry out on a cluster yet (archives,
// moves, a box's room for a load); nothing has changed there when it does.
var ErrNotYet = errors.New("this boxes does not do that on kubernetes: hosts yet")

func (e *Engine) notYet(what string) error {
	return e.fail(fmt.Errorf("%s: %w", what, ErrNotYet), "what works on a cluster today is listed in docs/kubernetes.md; a Docker host does it")
}

// Capabilities: a Sandbox has no freeze and no rename.
func (e *Engine) Capabilities() engine.Capabilities { return engine.Capabilities{} }

// VolumeSizes measures each volume with du in the running pod that mounts
// it (engine.SizeVolumes); a stopped box's are unread.
func (e *Engine) VolumeSizes(ctx context.Context, o *engine.Observed, volumes []string) map[string]engine.VolumeSize {
	return engine.SizeVolumes(ctx, e, o, volumes, nil)
}

func (e *Engine) Pause(ctx context.Context, id string) error   { return e.notYet("freezing " + id) }
func (e *Engine) Unpause(ctx context.Context, id string) error { return e.notYet("thawing " + id) }

func (e *Engine) VolumeRoom(ctx context.Context, image, box string) (int64, error) {
	return 0, e.notYet("measuring the room for " + box)
}

// ExecutorReach: a box's executor on a cluster is reached through the API
// server, never on a published port.
func (e *Engine) ExecutorReach(bind string, port int) engine.Reach {
	return engine.Reach{How: engine.ReachHostOnly, OnHost: "the cluster's service network"}
}

// MachineAddresses: a cluster's nodes are not this engine's machine; the
// NetworkPolicies close the cluster's own addresses.
func (e *Engine) MachineAddresses() []netip.Addr { return nil }

// ID is the cluster's API server and namespace: two hosts with one ID are
// one namespace of one cluster.
func (e *Engine) ID() string { return e.cfg.Host + "/" + e.namespace }

func (e *Engine) SameEngineAs(first string) error {
	return e.fail(fmt.Errorf("reaches namespace %s of the cluster host %s reaches already", e.namespace, first), "keep one host per namespace in boxes.yaml")
}

func (e *Engine) SaveImage(ctx context.Context, ref string) (string, io.ReadCloser, error) {
	return "", nil, e.notYet("saving image " + ref)
}

// LoadImage: nothing loads an image into a cluster's nodes but their
// registry.
func (e *Engine) LoadImage(ctx context.Context, ref, id string, r io.Reader) (int64, error) {
	return 0, e.fail(fmt.Errorf("image %s: a cluster's nodes get images from a registry only", id), "boxes build --push pushes the image and records its reference in boxes.lock; the plan then has the cluster pull it")
}

func (e *Engine) Close() error { return nil }

var _ engine.Engine = (*Engine)(nil)
