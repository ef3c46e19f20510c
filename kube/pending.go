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
// contract this boxes does not carry out on a cluster yet: it reads the
// cluster (plan, ls, leases) and changes nothing there.
var ErrNotYet = errors.New("this boxes reads kubernetes: hosts (plan, ls) but does not yet change them")

func (e *Engine) notYet(what string) error {
	return e.fail(fmt.Errorf("%s: %w", what, ErrNotYet), "keep the host's boxes on a Docker host for now: boxes plan shows what would be made on the cluster")
}

// Capabilities: a Sandbox has no freeze and no rename.
func (e *Engine) Capabilities() engine.Capabilities { return engine.Capabilities{} }

func (e *Engine) VolumeSizes(ctx context.Context, o *engine.Observed, volumes []string) map[string]engine.VolumeSize {
	out := map[string]engine.VolumeSize{}
	for _, v := range volumes {
		out[v] = engine.VolumeSize{Bytes: -1, Unread: "volume sizes are not read on kubernetes: hosts yet"}
	}
	return out
}

func (e *Engine) ToolVersions(ctx context.Context, image string) (map[string]string, error) {
	return nil, e.notYet("reading the tools of " + image)
}

func (e *Engine) Pause(ctx context.Context, id string) error   { return e.notYet("freezing " + id) }
func (e *Engine) Unpause(ctx context.Context, id string) error { return e.notYet("thawing " + id) }

func (e *Engine) VolumeRoom(ctx context.Context, image, box string) (int64, error) {
	return 0, e.notYet("measuring the room for " + box)
}

func (e *Engine) RunHelper(ctx context.Context, h engine.Helper) ([]byte, error) {
	return nil, e.notYet("running a helper for " + h.Box)
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
