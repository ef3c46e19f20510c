package kube

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

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
