package kube

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/hb"
)

// A helper on a cluster (snapshots, forks, reverts, the tools of an image)
// is a pod of its own: one container of the box's image running boxes'
// command as root, never restarted, on the box's volume claims, removed by
// name once it ends, fails or is cut short. It is labelled as the box's
// one-off, so that Observe counts it no part of the box and a later helper
// finds one a killed boxes left writing.

// helperStartLimit bounds how long a helper pod may wait to start (to be
// scheduled, its claims bound, its image there) before it is given up
// with what the cluster said.
var helperStartLimit = 5 * time.Minute

// helperStderr is where a helper's standard error goes: its container's
// termination message, which the API returns apart from its logs (the
// logs carry both streams as one).
const helperStderr = "/dev/termination-log"

// RunHelper runs h in a new pod and returns what it printed on stdout. A
// volume h reads that the namespace lacks is engine.ErrNoVolume, one it
// makes (HelperMount.Labels) that is there already engine.ErrVolumeExists;
// nothing is run then. A volume it writes that a helper of a killed boxes
// still writes has that helper removed first. The pod runs on the node
// where a pod of the box already mounts one of its claims, if any: a claim
// is attached to one node at a time.
func (e *Engine) RunHelper(ctx context.Context, h engine.Helper) ([]byte, error) {
	// The claims there first, then those to make: a refusal makes none.
	for _, m := range h.Mounts {
		if m.Labels != nil {
			continue
		}
		claim := objectName(m.Volume)
		_, err := e.core.CoreV1().PersistentVolumeClaims(e.namespace).Get(ctx, claim, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("volume %s: %w", m.Volume, engine.ErrNoVolume)
		}
		if err != nil {
			return nil, e.apiError("reading volume claim "+claim, err)
		}
		if !m.ReadOnly {
			if err := e.removeWriters(ctx, claim); err != nil {
				return nil, err
			}
		}
	}
	for _, m := range h.Mounts {
		if m.Labels == nil {
			continue
		}
		// Made before the pod: a kill in between leaves a snapshot claim
		// with no data/ in it, which revert refuses as incomplete and
		// boxes snapshot rm removes.
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: meta(m.Volume, e.namespace, m.Labels, m.Labels[compose.FleetLabel], ""),
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: VolumeRequest}},
			},
		}
		_, err := e.core.CoreV1().PersistentVolumeClaims(e.namespace).Create(ctx, pvc, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("volume %s: %w", m.Volume, engine.ErrVolumeExists)
		}
		if err != nil {
			return nil, e.apiError("making volume claim "+pvc.Name, err)
		}
	}
	if err := e.closeHelpers(ctx); err != nil {
		return nil, err
	}
	node, err := e.helperNode(ctx, h)
	if err != nil {
		return nil, err
	}
	p, err := e.core.CoreV1().Pods(e.namespace).Create(ctx, e.helperPod(h, node), metav1.CreateOptions{})
	if err != nil {
		return nil, e.apiError("making a helper pod for "+h.Box, err)
	}
	defer func() {
		// By name and UID: this pod, whatever happened, even cut short.
		zero := int64(0)
		_ = e.core.CoreV1().Pods(e.namespace).Delete(context.WithoutCancel(ctx), p.Name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &p.UID}})
	}()
	term, err := e.helperEnd(ctx, p.Name)
	if err != nil {
		return nil, err
	}
	if term.ExitCode != 0 {
		return nil, &engine.ExitError{Code: int(term.ExitCode), Stderr: strings.TrimSpace(term.Message)}
	}
	r, err := e.core.CoreV1().Pods(e.namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).Stream(ctx)
	if err != nil {
		return nil, e.apiError("reading what helper "+p.Name+" printed", err)
	}
	defer r.Close()
	var out bytes.Buffer
	if _, err := io.Copy(&out, r); err != nil {
		return nil, e.apiError("reading what helper "+p.Name+" printed", err)
	}
	return out.Bytes(), nil
}

// helperPod is h as a pod, on node when it is not "".
func (e *Engine) helperPod(h engine.Helper, node string) *corev1.Pod {
	labels := selectLabels(h.Box, "", "")
	labels[compose.OneOffLabel] = "1"
	ann := map[string]string{}
	if h.Snapshot != "" {
		// An annotation: a snapshot's label may end in "-", which no
		// label value may.
		ann[compose.SnapshotLabel] = h.Snapshot
	}
	image, pull := e.podImage(h.Image)
	root, no := int64(0), false
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: objectName(compose.ProjectName(h.Box)) + "-helper-", Namespace: e.namespace, Labels: labels, Annotations: ann},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			ImagePullSecrets:             e.imagePullSecrets(h.Image),
			AutomountServiceAccountToken: &no,
			EnableServiceLinks:           &no,
			Containers: []corev1.Container{{
				Name: "helper", Image: image, ImagePullPolicy: pull, WorkingDir: "/",
				// stderr to the termination message; exec keeps the exit code.
				Command:                  append([]string{"sh", "-c", `exec "$@" 2>` + helperStderr, "sh"}, h.Cmd...),
				TerminationMessagePath:   helperStderr,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				SecurityContext:          &corev1.SecurityContext{RunAsUser: &root, RunAsGroup: &root},
			}},
		},
	}
	for i, m := range h.Mounts {
		name := "v" + strconv.Itoa(i)
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: objectName(m.Volume), ReadOnly: m.ReadOnly}}})
		pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: name, MountPath: m.Target, ReadOnly: m.ReadOnly})
	}
	if node != "" {
		// Affinity rather than nodeName: a claim that waits for its
		// first consumer is bound only by the scheduler.
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}},
		}}}
	}
	return pod
}

// HelpersPolicy is the NetworkPolicy that takes every helper pod of a
// namespace off the network, in and out, as a helper container on Docker
// has none: a helper only copies and measures files.
const HelpersPolicy = "boxes-helpers"

// closeHelpers makes HelpersPolicy in the namespace unless it is there.
func (e *Engine) closeHelpers(ctx context.Context) error {
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: HelpersPolicy, Namespace: e.namespace, Labels: map[string]string{compose.ManagedLabel: "1"}},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{compose.ManagedLabel: "1", compose.OneOffLabel: "1"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
	_, err := e.core.NetworkingV1().NetworkPolicies(e.namespace).Create(ctx, np, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return e.apiError("making network policy "+HelpersPolicy, err)
	}
	return nil
}

// helperNode reads the pods of h's box: it removes the helpers that ended
// and were left there (by a boxes killed before it removed them), and
// returns the node of a pod that mounts one of h's claims and has not
// ended; "" when none does.
func (e *Engine) helperNode(ctx context.Context, h engine.Helper) (string, error) {
	claims := map[string]bool{}
	for _, m := range h.Mounts {
		claims[objectName(m.Volume)] = true
	}
	list, err := e.core.CoreV1().Pods(e.namespace).List(ctx, metav1.ListOptions{LabelSelector: compose.BoxLabel + "=" + h.Box})
	if err != nil {
		return "", e.apiError("listing the pods of "+h.Box, err)
	}
	node := ""
	for _, p := range list.Items {
		ended := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		if ended && p.Labels[compose.OneOffLabel] != "" {
			if err := e.core.CoreV1().Pods(e.namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return "", e.apiError("removing helper pod "+p.Name, err)
			}
			continue
		}
		if ended || p.Spec.NodeName == "" || node != "" {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && claims[v.PersistentVolumeClaim.ClaimName] {
				node = p.Spec.NodeName
			}
		}
	}
	return node, nil
}

// helperEnd waits for helper pod name's container to end and returns how
// it ended. A pod that cannot start (its image missing, unschedulable)
// fails with the cluster's reason once helperStartLimit has passed, or at
// once when it never will.
func (e *Engine) helperEnd(ctx context.Context, name string) (*corev1.ContainerStateTerminated, error) {
	began := time.Now()
	for {
		p, err := e.core.CoreV1().Pods(e.namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, e.apiError("reading helper pod "+name, err)
		}
		term, why, final := helperState(p)
		switch {
		case term != nil:
			return term, nil
		case final:
			return nil, fmt.Errorf("helper pod %s cannot run: %s", name, why)
		case why != "" && time.Since(began) > helperStartLimit:
			return nil, fmt.Errorf("helper pod %s has not started after %s: %s", name, helperStartLimit, why)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// helperState reads a helper pod: how its container ended, if it did;
// else why it has not ended yet, and whether that is final (no retry
// mends it). A pod long in one of the waits that are not final (its
// volumes not mounted, its image pulled again and again) is given up by
// helperEnd.
func helperState(p *corev1.Pod) (*corev1.ContainerStateTerminated, string, bool) {
	for _, cs := range p.Status.ContainerStatuses {
		switch {
		case cs.State.Terminated != nil:
			return cs.State.Terminated, "", false
		case cs.State.Waiting != nil && helperNever[cs.State.Waiting.Reason]:
			return nil, cs.State.Waiting.Reason + ": " + cs.State.Waiting.Message, true
		case cs.State.Waiting != nil:
			return nil, strings.TrimSuffix(cs.State.Waiting.Reason+": "+cs.State.Waiting.Message, ": "), false
		}
	}
	if p.Status.Phase == corev1.PodFailed {
		return nil, "the pod failed: " + p.Status.Reason + " " + p.Status.Message, true
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
			return nil, "not scheduled: " + c.Message, false
		}
	}
	if p.Status.Phase == corev1.PodPending {
		return nil, "pending", false
	}
	return nil, "", false
}

// helperNever are the reasons a container waits that no retry mends.
var helperNever = map[string]bool{"ErrImageNeverPull": true, "InvalidImageName": true}

// removeWriters removes the helper pods left mounting claim read-write:
// those of a killed boxes, which would write beside the next one.
func (e *Engine) removeWriters(ctx context.Context, claim string) error {
	return e.removeHelpers(ctx, claim, func(p *corev1.Pod) bool { return mounts(p, claim, true) })
}

// removeHelpers removes the helper pods that left says were left on
// claim, and waits until they are gone (their hold on it let go).
func (e *Engine) removeHelpers(ctx context.Context, claim string, left func(*corev1.Pod) bool) error {
	list, err := e.core.CoreV1().Pods(e.namespace).List(ctx, metav1.ListOptions{LabelSelector: compose.OneOffLabel + "=1"})
	if err != nil {
		return e.apiError("listing helper pods", err)
	}
	for _, p := range list.Items {
		if !left(&p) {
			continue
		}
		zero := int64(0)
		err := e.core.CoreV1().Pods(e.namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) {
			return e.apiError("removing helper pod "+p.Name, err)
		}
		if err := e.podGone(ctx, p.Name); err != nil {
			return err
		}
	}
	return nil
}

// mounts reports whether pod p mounts claim (read-write, when writing).
func mounts(p *corev1.Pod, claim string, writing bool) bool {
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != claim {
			continue
		}
		if !writing {
			return true
		}
		if v.PersistentVolumeClaim.ReadOnly {
			continue
		}
		for _, c := range p.Spec.Containers {
			for _, m := range c.VolumeMounts {
				if m.Name == v.Name && !m.ReadOnly {
					return true
				}
			}
		}
	}
	return false
}

// podGone waits until pod name is gone: its processes ended, its volumes
// let go.
func (e *Engine) podGone(ctx context.Context, name string) error {
	return e.waitGone(ctx, "pod "+name, func(ctx context.Context) error {
		_, err := e.core.CoreV1().Pods(e.namespace).Get(ctx, name, metav1.GetOptions{})
		return err
	})
}

// waitGone waits until get answers that what is not found, for up to
// WaitTimeout.
func (e *Engine) waitGone(ctx context.Context, what string, get func(context.Context) error) error {
	deadline := time.Now().Add(WaitTimeout)
	for {
		err := get(ctx)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return e.apiError("reading "+what, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is still there after %s", what, WaitTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ToolVersions runs `hb versions --json` in a helper pod of image and
// returns tool → version for the tools it found.
func (e *Engine) ToolVersions(ctx context.Context, image string) (map[string]string, error) {
	out, err := e.RunHelper(ctx, engine.Helper{Box: toolsBox, Image: image, Cmd: hb.VersionsCmd})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", strings.Join(hb.VersionsCmd, " "), err)
	}
	return hb.ParseVersions(out)
}

// toolsBox is the box a helper that belongs to none is labelled with.
const toolsBox = "boxes-tools"
