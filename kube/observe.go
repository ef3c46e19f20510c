package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	sandboxv1 "sigs.k8s.io/agent-sandbox/api/v1beta1"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
)

// NameAnnotation is the name boxes gives an object (compose's, such as
// hbl-web_data), kept beside the object's own name, which Kubernetes
// allows no "_" in.
const NameAnnotation = "boxes.name"

// ImageAnnotation is the image a box's Sandbox was made to run: the lock's
// image ID, which a plan compares with the lock's.
const ImageAnnotation = "boxes.image"

// MountsAnnotation lists a Sandbox's volumes as boxes names them, with
// where they are mounted (NAME:PATH,…); NetworksAnnotation the networks of
// its service (the NetworkPolicies that stand for them).
const (
	MountsAnnotation   = "boxes.mounts"
	NetworksAnnotation = "boxes.networks"
)

// SpecAnnotation is the hash of the pod template a Sandbox was made with:
// a template edited by hand no longer matches it.
const SpecAnnotation = "boxes.spec"

// specHash is the hash of sb's pod template and volume claims templates.
func specHash(sb *sandboxv1.Sandbox) string {
	data, _ := json.Marshal(sb.Spec.SandboxBlueprint) // plain API types always marshal
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:12])
}

// managed selects the objects boxes made.
var managed = metav1.ListOptions{LabelSelector: compose.ManagedLabel + "=1"}

// listing is Observe's lists: one call for each kind, whatever the number
// of boxes.
type listing struct {
	sandboxes []sandboxv1.Sandbox
	pods      []corev1.Pod
	claims    []corev1.PersistentVolumeClaim
	policies  []networkingv1.NetworkPolicy
	marks     []corev1.ConfigMap
}

// Observe lists the namespace's labelled objects in five calls (Sandboxes,
// pods, volume claims, NetworkPolicies, lease marks), made at once.
func (e *Engine) Observe(ctx context.Context, images ...string) (*engine.Observed, error) {
	var l listing
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		var list sandboxv1.SandboxList
		err := e.sandboxes.Get().Namespace(e.namespace).Resource("sandboxes").VersionedParams(&managed, parameterCodec()).Do(gctx).Into(&list)
		l.sandboxes = list.Items
		return err
	})
	g.Go(func() error {
		list, err := e.core.CoreV1().Pods(e.namespace).List(gctx, managed)
		if err == nil {
			l.pods = list.Items
		}
		return err
	})
	g.Go(func() error {
		list, err := e.core.CoreV1().PersistentVolumeClaims(e.namespace).List(gctx, managed)
		if err == nil {
			l.claims = list.Items
		}
		return err
	})
	g.Go(func() error {
		list, err := e.core.NetworkingV1().NetworkPolicies(e.namespace).List(gctx, managed)
		if err == nil {
			l.policies = list.Items
		}
		return err
	})
	g.Go(func() error {
		list, err := e.core.CoreV1().ConfigMaps(e.namespace).List(gctx, metav1.ListOptions{LabelSelector: compose.LeaseLabel})
		if err == nil {
			l.marks = list.Items
		}
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, e.apiError("observing namespace "+e.namespace, err)
	}
	o := l.observed(e.host.Name)
	// A box's executor is reached through the API server's port-forward
	// (ForwardExecutor), never on a published port.
	o.Unpublished = true
	for _, id := range images {
		// What images the nodes hold is theirs: a plan brings each one
		// it needs by its registry reference (PullImage).
		o.Images[id] = false
	}
	o.Sort()
	return o, nil
}

// observed is l as the planner sees it.
func (l listing) observed(host string) *engine.Observed {
	o := &engine.Observed{
		Host:      host,
		Unmanaged: engine.Unmanaged{Containers: map[string]bool{}, Volumes: map[string]bool{}, Networks: map[string]bool{}},
		Images:    map[string]bool{},
	}
	pods := map[string]*corev1.Pod{}
	writing := map[string]bool{} // snapshot claims a helper pod is writing
	for i := range l.pods {
		p := &l.pods[i]
		if owner := sandboxOwner(p); owner != "" {
			pods[owner] = p
		}
		if box, ok := managedBox(p.Labels); ok && p.Labels[compose.OneOffLabel] != "" && p.Annotations[compose.SnapshotLabel] != "" {
			writing[compose.SnapshotVolumeName(box, p.Annotations[compose.SnapshotLabel])] = true
		}
	}
	for _, s := range l.sandboxes {
		box, ok := managedBox(s.Labels)
		if !ok || s.DeletionTimestamp != nil && len(s.Finalizers) == 0 {
			continue
		}
		o.Containers = append(o.Containers, containerOf(s, pods[s.Name], box))
	}
	for _, c := range l.claims {
		box, ok := managedBox(c.Labels)
		if !ok {
			continue
		}
		labels := labelsOf(c.ObjectMeta)
		if label := labels[compose.SnapshotLabel]; label != "" {
			o.Snapshots = append(o.Snapshots, compose.SnapshotOf(nameOf(c.ObjectMeta), box, label, labels, writing[nameOf(c.ObjectMeta)]))
			continue
		}
		o.Volumes = append(o.Volumes, engine.Volume{
			Name: nameOf(c.ObjectMeta), Box: box, Fleet: c.Labels[compose.FleetLabel],
			Labels: labels, Size: -1, Created: c.CreationTimestamp.Time,
		})
	}
	for _, n := range l.policies {
		box, ok := managedBox(n.Labels)
		if !ok {
			continue
		}
		o.Networks = append(o.Networks, engine.Network{ID: n.Name, Name: nameOf(n.ObjectMeta), Box: box, Fleet: n.Labels[compose.FleetLabel], Labels: labelsOf(n.ObjectMeta)})
	}
	for _, m := range l.marks {
		o.LeaseMarks = append(o.LeaseMarks, leaseMarkOf(m))
	}
	return o
}

// sandboxOwner is the Sandbox a pod belongs to, by its owner reference.
func sandboxOwner(p *corev1.Pod) string {
	for _, r := range p.OwnerReferences {
		if r.Kind == sandboxv1.SandboxKind && strings.HasPrefix(r.APIVersion, sandboxv1.GroupVersion.Group+"/") {
			return r.Name
		}
	}
	return ""
}

// containerOf is the container of Sandbox s (a box's service), as its pod
// p tells it; a Sandbox without a pod is a stopped container (suspended)
// or one not yet started.
func containerOf(s sandboxv1.Sandbox, p *corev1.Pod, box string) engine.Container {
	labels := labelsOf(s.ObjectMeta)
	c := engine.Container{
		ID:         s.Name,
		Name:       nameOf(s.ObjectMeta),
		Box:        box,
		Service:    labels[compose.ComposeServiceLabel],
		Image:      s.Annotations[ImageAnnotation],
		Fleet:      labels[compose.FleetLabel],
		ConfigHash: labels[compose.ComposeConfigHashLabel],
		Labels:     labels,
		State:      engine.Created,
	}
	if made := s.Annotations[SpecAnnotation]; made != "" && made != specHash(&s) {
		// Its pod template was edited since boxes made it: no longer
		// what its config hash says (the plan remakes it).
		c.ConfigHash = "edited-" + c.ConfigHash
	}
	for _, m := range strings.Split(labels[MountsAnnotation], ",") {
		if name, dest, ok := strings.Cut(m, ":"); ok {
			c.Mounts = append(c.Mounts, engine.Mount{Volume: name, Destination: dest})
		}
	}
	if n := labels[NetworksAnnotation]; n != "" {
		c.Networks = strings.Split(n, ",")
	}
	switch {
	case p == nil && s.Spec.OperatingMode == sandboxv1.SandboxOperatingModeSuspended:
		c.State = engine.Exited
	case p == nil:
		c.State = engine.Created
	default:
		c.State, c.ExitCode, c.Restarts, c.Error = podState(p)
		if p.DeletionTimestamp != nil {
			c.State = engine.Removing
		}
	}
	return c
}

// kubeletRetries are the reasons a container waits that the kubelet
// retries on its own at the pod's next sync: "failed to sync secret cache:
// timed out waiting for the condition" is one on a busy node, and passes.
var kubeletRetries = map[string]bool{"CreateContainerConfigError": true, "CreateContainerError": true}

// podState is the state of a pod's one container.
func podState(p *corev1.Pod) (engine.State, int, int, string) {
	if len(p.Status.ContainerStatuses) == 0 {
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			return engine.Exited, 0, 0, p.Status.Message
		}
		return engine.Created, 0, 0, ""
	}
	cs := p.Status.ContainerStatuses[0]
	restarts := int(cs.RestartCount)
	switch {
	case cs.State.Running != nil:
		return engine.Running, 0, restarts, ""
	case cs.State.Terminated != nil:
		return engine.Exited, int(cs.State.Terminated.ExitCode), restarts, cs.State.Terminated.Message
	case cs.State.Waiting != nil && restarts > 0:
		code := 0
		if t := cs.LastTerminationState.Terminated; t != nil {
			code = int(t.ExitCode)
		}
		return engine.Restarting, code, restarts, cs.State.Waiting.Message
	case cs.State.Waiting != nil && kubeletRetries[cs.State.Waiting.Reason]:
		// Not made yet, and the kubelet tries again by itself: a Secret
		// its cache has not synced, a runtime's passing refusal.
		return engine.Created, 0, restarts, cs.State.Waiting.Reason + ": " + cs.State.Waiting.Message
	case cs.State.Waiting != nil && cs.State.Waiting.Reason != "ContainerCreating" && cs.State.Waiting.Reason != "PodInitializing":
		// The image cannot be pulled, the container cannot be made: it
		// will not start by itself.
		return engine.Dead, 0, restarts, cs.State.Waiting.Reason + ": " + cs.State.Waiting.Message
	}
	return engine.Created, 0, restarts, ""
}

func leaseMarkOf(m corev1.ConfigMap) engine.LeaseMark {
	return compose.LeaseMarkOf(leaseMarkPrefix+m.Name, nameOf(m.ObjectMeta), labelsOf(m.ObjectMeta))
}

func managedBox(labels map[string]string) (string, bool) {
	if labels[compose.ManagedLabel] != "1" || labels[compose.BoxLabel] == "" {
		return "", false
	}
	return labels[compose.BoxLabel], true
}

// labelsOf is an object's labels and annotations together: boxes' labels
// as the planner reads them on any engine (a label's value in Kubernetes
// is too short for a box's settings, which ride as annotations).
func labelsOf(m metav1.ObjectMeta) map[string]string {
	out := make(map[string]string, len(m.Labels)+len(m.Annotations))
	for k, v := range m.Annotations {
		out[k] = v
	}
	for k, v := range m.Labels {
		out[k] = v
	}
	return out
}

// nameOf is the name boxes gave the object.
func nameOf(m metav1.ObjectMeta) string {
	if n := m.Annotations[NameAnnotation]; n != "" {
		return n
	}
	return m.Name
}

// objectName is Kubernetes' name for boxes' name n: "_" becomes "-".
func objectName(n string) string { return strings.ToLower(strings.ReplaceAll(n, "_", "-")) }

// parameterCodec encodes list options for the Sandbox client.
var parameterCodec = sync.OnceValue(func() runtime.ParameterCodec { return runtime.NewParameterCodec(scheme()) })
