package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	sandboxv1 "sigs.k8s.io/agent-sandbox/api/v1beta1"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
)

// order is the order a box's Sandboxes are made in: the agent last, as on
// Docker, with the addresses of its gate and executor.
var order = []string{compose.ExecutorService, compose.GateService, compose.AgentService}

// Create makes the box's volume claims, Secrets, Services, NetworkPolicies
// and Sandboxes, not started (suspended). A Sandbox whose config hash is
// not the project's is made anew, as compose recreates a diverged
// container; force makes every one anew. Claims are never replaced.
func (e *Engine) Create(ctx context.Context, p *types.Project, force bool) error {
	return e.create(ctx, p, func(have *sandboxv1.Sandbox, want *sandboxv1.Sandbox) bool {
		return force || have.Annotations[compose.ComposeConfigHashLabel] != want.Annotations[compose.ComposeConfigHashLabel]
	}, nil)
}

// Replace makes the Sandboxes of the named services anew, leaving the
// others as they run; a replaced one runs if the one it replaces ran.
func (e *Engine) Replace(ctx context.Context, p *types.Project, services []string) error {
	return e.create(ctx, p, func(have, want *sandboxv1.Sandbox) bool { return true }, services)
}

func (e *Engine) create(ctx context.Context, p *types.Project, remake func(have, want *sandboxv1.Sandbox) bool, only []string) error {
	o, err := objectsOf(p, e.namespace)
	if err != nil {
		return fmt.Errorf("box %s: %w", boxOf(p), err)
	}
	e.withImages(o, p)
	for _, c := range o.claims {
		if _, err := e.core.CoreV1().PersistentVolumeClaims(e.namespace).Create(ctx, c, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return e.apiError("making volume claim "+c.Name, err)
		}
	}
	for _, np := range o.policies {
		if err := e.put(ctx, "network policy "+np.Name, func() error {
			_, err := e.core.NetworkingV1().NetworkPolicies(e.namespace).Create(ctx, np, metav1.CreateOptions{})
			return err
		}, func() error {
			have, err := e.core.NetworkingV1().NetworkPolicies(e.namespace).Get(ctx, np.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			np.ResourceVersion = have.ResourceVersion
			_, err = e.core.NetworkingV1().NetworkPolicies(e.namespace).Update(ctx, np, metav1.UpdateOptions{})
			return err
		}); err != nil {
			return err
		}
	}
	aliases := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(o.services)) {
		svc := o.services[name]
		got, err := e.core.CoreV1().Services(e.namespace).Create(ctx, svc, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			got, err = e.core.CoreV1().Services(e.namespace).Get(ctx, svc.Name, metav1.GetOptions{})
			if err == nil && !equality.Semantic.DeepEqual(got.Spec.Ports, svc.Spec.Ports) {
				// Made by an earlier boxes with other ports: its address
				// (the agent's host alias) is kept, its ports replaced.
				got.Spec.Ports = svc.Spec.Ports
				got, err = e.core.CoreV1().Services(e.namespace).Update(ctx, got, metav1.UpdateOptions{})
			}
		}
		if err != nil {
			return e.apiError("making service "+svc.Name, err)
		}
		aliases[name] = got.Spec.ClusterIP
	}
	for _, name := range order {
		sb, ok := o.sandboxes[name]
		if !ok || (only != nil && !slices.Contains(only, name)) {
			continue
		}
		if name == compose.AgentService {
			for _, svc := range slices.Sorted(maps.Keys(aliases)) {
				if ip := aliases[svc]; ip != "" && ip != corev1.ClusterIPNone {
					sb.Spec.PodTemplate.Spec.HostAliases = append(sb.Spec.PodTemplate.Spec.HostAliases, corev1.HostAlias{IP: ip, Hostnames: []string{svc}})
				}
			}
		}
		secret := o.secrets[name]
		if err := e.put(ctx, "secret "+secret.Name, func() error {
			_, err := e.core.CoreV1().Secrets(e.namespace).Create(ctx, secret, metav1.CreateOptions{})
			return err
		}, func() error {
			_, err := e.core.CoreV1().Secrets(e.namespace).Update(ctx, secret, metav1.UpdateOptions{})
			return err
		}); err != nil {
			return err
		}
		have, err := e.sandbox(ctx, sb.Name)
		if err != nil {
			return err
		}
		if have != nil {
			if !remake(have, sb) {
				continue
			}
			if have.Spec.OperatingMode == sandboxv1.SandboxOperatingModeRunning {
				sb.Spec.OperatingMode = sandboxv1.SandboxOperatingModeRunning
			}
			if err := e.removeSandbox(ctx, sb.Name); err != nil {
				return err
			}
		}
		sb.Annotations[SpecAnnotation] = specHash(sb)
		if err := e.sandboxes.Post().Namespace(e.namespace).Resource("sandboxes").Body(sb).Do(ctx).Error(); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("making sandbox %s: %w", sb.Name, engine.ErrRaced)
			}
			return e.apiError("making sandbox "+sb.Name, err)
		}
	}
	return nil
}

// put creates an object, or updates it when it exists.
func (e *Engine) put(ctx context.Context, what string, create, update func() error) error {
	err := create()
	if apierrors.IsAlreadyExists(err) {
		err = update()
	}
	if err != nil {
		return e.apiError("making "+what, err)
	}
	return nil
}

// sandbox is the Sandbox of that name, nil when there is none.
func (e *Engine) sandbox(ctx context.Context, name string) (*sandboxv1.Sandbox, error) {
	var sb sandboxv1.Sandbox
	err := e.sandboxes.Get().Namespace(e.namespace).Resource("sandboxes").Name(name).Do(ctx).Into(&sb)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, e.apiError("reading sandbox "+name, err)
	}
	return &sb, nil
}

// boxSandboxes are box's Sandboxes.
func (e *Engine) boxSandboxes(ctx context.Context, box string) ([]sandboxv1.Sandbox, error) {
	var list sandboxv1.SandboxList
	opts := metav1.ListOptions{LabelSelector: compose.ManagedLabel + "=1," + compose.BoxLabel + "=" + box}
	if err := e.sandboxes.Get().Namespace(e.namespace).Resource("sandboxes").VersionedParams(&opts, parameterCodec()).Do(ctx).Into(&list); err != nil {
		return nil, e.apiError("listing the sandboxes of "+box, err)
	}
	return list.Items, nil
}

// setMode suspends or runs a Sandbox.
func (e *Engine) setMode(ctx context.Context, name string, mode sandboxv1.SandboxOperatingMode) error {
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"operatingMode": mode}})
	err := e.sandboxes.Patch(ktypes.MergePatchType).Namespace(e.namespace).Resource("sandboxes").Name(name).Body(patch).Do(ctx).Error()
	if err != nil {
		return e.apiError("setting sandbox "+name+" to "+string(mode), err)
	}
	return nil
}

// Start makes what is missing of the box and runs its Sandboxes.
func (e *Engine) Start(ctx context.Context, p *types.Project) error {
	if err := e.Create(ctx, p, false); err != nil {
		return err
	}
	for _, name := range order {
		s, ok := p.Services[name]
		if !ok {
			continue
		}
		cn := s.ContainerName
		if cn == "" {
			cn = compose.ContainerName(boxOf(p), name)
		}
		if err := e.setMode(ctx, objectName(cn), sandboxv1.SandboxOperatingModeRunning); err != nil {
			return err
		}
	}
	return nil
}

// Stop suspends the box's Sandboxes (their claims are kept) and waits
// until their pods are gone.
func (e *Engine) Stop(ctx context.Context, project string) error {
	box := project[len(compose.ProjectPrefix):]
	sbs, err := e.boxSandboxes(ctx, box)
	if err != nil {
		return err
	}
	for _, sb := range sbs {
		if err := e.setMode(ctx, sb.Name, sandboxv1.SandboxOperatingModeSuspended); err != nil {
			return err
		}
	}
	return e.waitPods(ctx, box, "")
}

// waitPods returns once box has no pod of service ("" any).
func (e *Engine) waitPods(ctx context.Context, box, service string) error {
	sel := compose.ManagedLabel + "=1," + compose.BoxLabel + "=" + box
	if service != "" {
		sel += "," + compose.ComposeServiceLabel + "=" + service
	}
	ctx, cancel := context.WithTimeout(ctx, WaitTimeout)
	defer cancel()
	for {
		pods, err := e.core.CoreV1().Pods(e.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("the pods of %s still run after %s", box, WaitTimeout)
			}
			return e.apiError("listing the pods of "+box, err)
		}
		if len(pods.Items) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d pods of %s still run after %s", len(pods.Items), box, WaitTimeout)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// WaitTimeout bounds each wait for the cluster.
var WaitTimeout = 3 * time.Minute

// removeSandbox deletes a Sandbox and waits until its pod is gone (the pod
// holds its volume claims).
func (e *Engine) removeSandbox(ctx context.Context, name string) error {
	sb, err := e.sandbox(ctx, name)
	if err != nil || sb == nil {
		return err
	}
	propagation := metav1.DeletePropagationForeground
	err = e.sandboxes.Delete().Namespace(e.namespace).Resource("sandboxes").Name(name).Body(&metav1.DeleteOptions{PropagationPolicy: &propagation}).Do(ctx).Error()
	if err != nil && !apierrors.IsNotFound(err) {
		return e.apiError("removing sandbox "+name, err)
	}
	box, service := sb.Labels[compose.BoxLabel], sb.Labels[compose.ComposeServiceLabel]
	if err := e.waitGone(ctx, "sandbox "+name, func(ctx context.Context) error {
		return e.sandboxes.Get().Namespace(e.namespace).Resource("sandboxes").Name(name).Do(ctx).Error()
	}); err != nil {
		return err
	}
	return e.waitPods(ctx, box, service)
}

// RemoveContainer removes a box's container: its Sandbox (id), then its
// Secret and, for the gate and executor, the Service that gave it its
// address. The Sandbox goes first: one left without its Secret or Service
// would run broken while the plan, which sees Sandboxes, found nothing to
// do. A Secret or Service a removal cut short leaves is swept as the box's
// networks go (sweepBox), or remade as it was by the box's next create.
func (e *Engine) RemoveContainer(ctx context.Context, id string) error {
	if name, ok := strings.CutPrefix(id, leaseMarkPrefix); ok {
		return e.removeLeaseMark(ctx, name)
	}
	sb, err := e.sandbox(ctx, id)
	if err != nil || sb == nil {
		return err
	}
	if err := e.removeSandbox(ctx, id); err != nil {
		return err
	}
	if err := e.removeSecret(ctx, id); err != nil {
		return err
	}
	return e.removeService(ctx, sb.Labels[compose.BoxLabel], sb.Labels[compose.ComposeServiceLabel])
}

// removeSecret removes a container's Secret, name being its Sandbox's.
func (e *Engine) removeSecret(ctx context.Context, name string) error {
	if err := e.core.CoreV1().Secrets(e.namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return e.apiError("removing secret "+name, err)
	}
	return nil
}

// removeService removes the Service of box's service, if it has one.
func (e *Engine) removeService(ctx context.Context, box, service string) error {
	if _, ok := reached[service]; !ok {
		return nil
	}
	name := objectName(compose.ProjectName(box) + "-" + service)
	if err := e.core.CoreV1().Services(e.namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return e.apiError("removing service "+name, err)
	}
	return nil
}

// sweepBox removes the Secrets and Services of box whose Sandbox is gone:
// those an apply killed between making one and its Sandbox left, which no
// plan sees. It runs as the box's networks go.
func (e *Engine) sweepBox(ctx context.Context, box string) error {
	sbs, err := e.boxSandboxes(ctx, box)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, sb := range sbs {
		have[sb.Labels[compose.ComposeServiceLabel]] = true
	}
	sel := metav1.ListOptions{LabelSelector: compose.ManagedLabel + "=1," + compose.BoxLabel + "=" + box}
	secrets, err := e.core.CoreV1().Secrets(e.namespace).List(ctx, sel)
	if err != nil {
		return e.apiError("listing the secrets of "+box, err)
	}
	for _, s := range secrets.Items {
		if service := s.Labels[compose.ComposeServiceLabel]; service != "" && !have[service] {
			if err := e.removeSecret(ctx, s.Name); err != nil {
				return err
			}
		}
	}
	for service := range reached {
		if !have[service] {
			if err := e.removeService(ctx, box, service); err != nil {
				return err
			}
		}
	}
	return nil
}

// RenameContainer: a cluster renames nothing (Capabilities().Rename is false).
func (e *Engine) RenameContainer(ctx context.Context, from, to string) error {
	return errors.New("a kubernetes: host renames no sandbox")
}

// RemoveNetwork removes the NetworkPolicy that stands for a network (id is
// its name).
func (e *Engine) RemoveNetwork(ctx context.Context, id string) error {
	np, err := e.core.NetworkingV1().NetworkPolicies(e.namespace).Get(ctx, id, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return e.apiError("reading network policy "+id, err)
	}
	// The box's network goes once its containers have: what of theirs a
	// killed apply left goes with it.
	if box := np.Labels[compose.BoxLabel]; box != "" {
		if err := e.sweepBox(ctx, box); err != nil {
			return err
		}
	}
	err = e.core.NetworkingV1().NetworkPolicies(e.namespace).Delete(ctx, id, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return e.apiError("removing network policy "+id, err)
	}
	return nil
}

// RemoveVolume removes a volume's claim (and so, by the cluster's reclaim
// policy, its data), and first the helper pods a killed boxes left on it,
// which would hold it; it returns once the claim is gone.
func (e *Engine) RemoveVolume(ctx context.Context, name string) error {
	claim := objectName(name)
	if err := e.removeHelpers(ctx, claim, func(p *corev1.Pod) bool { return mounts(p, claim, false) }); err != nil {
		return err
	}
	claims := e.core.CoreV1().PersistentVolumeClaims(e.namespace)
	err := claims.Delete(ctx, claim, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return e.apiError("removing volume claim "+name, err)
	}
	// Gone once no pod holds it any more (its protection finalizer), as
	// a volume on Docker is gone when its removal returns.
	return e.waitGone(ctx, "volume claim "+claim, func(ctx context.Context) error {
		_, err := claims.Get(ctx, claim, metav1.GetOptions{})
		return err
	})
}

// previous is a box's Sandboxes as they were.
type previous struct {
	e   *Engine
	box string
	sbs []sandboxv1.Sandbox
}

// Previous records the box's Sandboxes before a recreate.
func (e *Engine) Previous(ctx context.Context, box string) (engine.Previous, error) {
	sbs, err := e.boxSandboxes(ctx, box)
	if err != nil || len(sbs) == 0 {
		return nil, err
	}
	return &previous{e: e, box: box, sbs: sbs}, nil
}

// Restore puts the recorded Sandboxes back in place of the current ones.
func (p *previous) Restore(ctx context.Context) (bool, error) {
	started := false
	for _, old := range p.sbs {
		if err := p.e.removeSandbox(ctx, old.Name); err != nil {
			return false, err
		}
		sb := old.DeepCopy()
		sb.ObjectMeta = metav1.ObjectMeta{Name: old.Name, Namespace: old.Namespace, Labels: old.Labels, Annotations: old.Annotations}
		sb.Status = sandboxv1.SandboxStatus{}
		if err := p.e.sandboxes.Post().Namespace(p.e.namespace).Resource("sandboxes").Body(sb).Do(ctx).Error(); err != nil {
			return started, p.e.apiError("putting back sandbox "+sb.Name, err)
		}
		started = started || sb.Spec.OperatingMode == sandboxv1.SandboxOperatingModeRunning
	}
	return started, nil
}
