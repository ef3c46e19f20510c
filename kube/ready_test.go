package kube

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/spec"
)

// notMadeYet is a pod whose container the kubelet could not make yet, as a
// busy node's kubelet reports a Secret its cache has not synced.
func notMadeYet(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: "failed to sync secret cache: timed out waiting for the condition"},
		}}}},
	}
}

// A container the kubelet cannot make yet, and retries, is waited for: the
// box is ready once the kubelet made it.
func TestReadyWaitsForTheKubeletsRetry(t *testing.T) {
	name := objectName(compose.ContainerName("kb", compose.GateService))
	core := fake.NewClientset(notMadeYet(name))
	e := &Engine{host: spec.Host{Name: "c"}, namespace: "ns", core: core}
	go func() {
		time.Sleep(300 * time.Millisecond)
		p := notMadeYet(name)
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, Ready: true}},
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		if _, err := core.CoreV1().Pods("ns").UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
		}
	}()
	p, err := e.ready(context.Background(), "kb", compose.GateService, "the gate")
	if err != nil {
		t.Fatalf("ready: %v, want the pod once the kubelet made its container", err)
	}
	if !podReady(p) {
		t.Errorf("ready returned a pod that is not ready: %+v", p.Status)
	}
}

// One the kubelet keeps failing to make is an error after RetriedFor, with
// the kubelet's reason.
func TestReadyGivesUpOnAContainerNeverMade(t *testing.T) {
	defer func(d time.Duration) { RetriedFor = d }(RetriedFor)
	RetriedFor = 300 * time.Millisecond
	name := objectName(compose.ContainerName("kb", compose.GateService))
	e := &Engine{host: spec.Host{Name: "c"}, namespace: "ns", core: fake.NewClientset(notMadeYet(name))}
	began := time.Now()
	_, err := e.ready(context.Background(), "kb", compose.GateService, "the gate")
	if err == nil || !strings.Contains(err.Error(), "could not be made") || !strings.Contains(err.Error(), "failed to sync secret cache") {
		t.Fatalf("ready: %v, want the kubelet's reason after %s", err, RetriedFor)
	}
	if took := time.Since(began); took < RetriedFor {
		t.Errorf("gave up after %s, before RetriedFor (%s)", took, RetriedFor)
	}
}

// notPulled is a pod whose image the node failed to pull, as the kubelet
// reports one a registry refused.
func notPulled(name, image string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "failed to resolve reference: 401 Unauthorized"},
		}}}},
	}
}

// A pod whose first pull failed is waited for while the kubelet pulls
// again (a pull secret made a moment before it may not have reached the
// kubelet's cache at the first pull); one that keeps failing is an error
// after PullRetriedFor naming the registry, with the hint to log in.
func TestReadyWaitsForAPullAgain(t *testing.T) {
	defer func(d time.Duration) { PullRetriedFor = d }(PullRetriedFor)
	PullRetriedFor = 300 * time.Millisecond
	name := objectName(compose.ContainerName("kb", compose.GateService))
	image := "reg.example:5000/hbl@sha256:" + strings.Repeat("ab", 32)

	core := fake.NewClientset(notPulled(name, image))
	e := &Engine{host: spec.Host{Name: "c"}, cfg: &rest.Config{Host: "https://c.example"}, namespace: "ns", core: core}
	go func() {
		time.Sleep(100 * time.Millisecond)
		p := notPulled(name, image)
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, Ready: true}},
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		if _, err := core.CoreV1().Pods("ns").UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
		}
	}()
	if _, err := e.ready(context.Background(), "kb", compose.GateService, "the gate"); err != nil {
		t.Fatalf("ready: %v, want the pod once the node pulled its image", err)
	}

	e = &Engine{host: spec.Host{Name: "c"}, cfg: &rest.Config{Host: "https://c.example"}, namespace: "ns", core: fake.NewClientset(notPulled(name, image))}
	began := time.Now()
	_, err := e.ready(context.Background(), "kb", compose.GateService, "the gate")
	var he *HostError
	if err == nil || !errors.As(err, &he) || !strings.Contains(err.Error(), "the node cannot pull image "+image+" from registry reg.example:5000: ErrImagePull: failed to resolve reference: 401 Unauthorized") ||
		!strings.Contains(he.Hint, "docker login reg.example:5000 on this machine") {
		t.Fatalf("ready: %v", err)
	}
	if took := time.Since(began); took < PullRetriedFor {
		t.Errorf("gave up after %s, before PullRetriedFor (%s)", took, PullRetriedFor)
	}
}
