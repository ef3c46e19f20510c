package kube

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	ktesting "k8s.io/client-go/testing"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/spec"
)

const helperNS = "ns"

func claim(volume string, labels map[string]string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: meta(volume, helperNS, labels, "", "")}
}

// helperEngine is an engine on a fake API server that holds objs, whose
// pods, once made, have ended as end says.
func helperEngine(t *testing.T, end corev1.ContainerState, objs ...runtime.Object) (*Engine, *fake.Clientset) {
	t.Helper()
	core := fake.NewClientset(objs...)
	n := 0
	core.PrependReactor("create", "pods", func(a ktesting.Action) (bool, runtime.Object, error) {
		p := a.(ktesting.CreateAction).GetObject().(*corev1.Pod)
		if p.Name == "" { // the fake does not generate names
			n++
			p.Name = p.GenerateName + string(rune('a'+n))
		}
		p.UID = "uid-x"
		p.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{Name: "helper", State: end}}}
		return false, nil, nil
	})
	return &Engine{host: spec.Host{Name: "c"}, cfg: &rest.Config{Host: "https://c.example"}, namespace: helperNS, core: core, refs: map[string]string{}, pullSecrets: map[string]string{}}, core
}

func podsOf(t *testing.T, core *fake.Clientset) []corev1.Pod {
	t.Helper()
	l, err := core.CoreV1().Pods(helperNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func claimsOf(t *testing.T, core *fake.Clientset) []string {
	t.Helper()
	l, err := core.CoreV1().PersistentVolumeClaims(helperNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range l.Items {
		out = append(out, c.Name)
	}
	return out
}

var exited0 = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}

// A helper that reads a volume the namespace lacks, or makes one it has,
// is refused before any pod or claim is made.
func TestRunHelperRefusals(t *testing.T) {
	data := compose.VolumeName("kb", compose.AgentVolume)
	snap := compose.SnapshotVolumeName("kb", "before")
	for _, tc := range []struct {
		name   string
		mounts []engine.HelperMount
		want   error
	}{
		{"reads a missing volume", []engine.HelperMount{{Volume: compose.VolumeName("gone", compose.AgentVolume), Target: "/from", ReadOnly: true}}, engine.ErrNoVolume},
		{"writes a missing volume", []engine.HelperMount{{Volume: compose.VolumeName("gone", compose.AgentVolume), Target: "/to"}}, engine.ErrNoVolume},
		{"makes a volume there already", []engine.HelperMount{{Volume: data, Target: "/from", ReadOnly: true}, {Volume: snap, Target: "/to", Labels: compose.Labels("kb")}}, engine.ErrVolumeExists},
		{"makes one and reads a missing one", []engine.HelperMount{{Volume: compose.SnapshotVolumeName("kb", "new"), Target: "/to", Labels: compose.Labels("kb")}, {Volume: compose.VolumeName("gone", compose.AgentVolume), Target: "/from", ReadOnly: true}}, engine.ErrNoVolume},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, core := helperEngine(t, exited0, claim(data, compose.Labels("kb")), claim(snap, compose.Labels("kb")))
			_, err := e.RunHelper(context.Background(), engine.Helper{Box: "kb", Image: "sha256:abc", Mounts: tc.mounts, Cmd: []string{"true"}})
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if p := podsOf(t, core); len(p) != 0 {
				t.Errorf("a refused helper made %d pods", len(p))
			}
			if c := claimsOf(t, core); len(c) != 2 {
				t.Errorf("claims after a refused helper: %v, want the two there before", c)
			}
		})
	}
}

// A helper is a pod of the box's image, as root, never restarted, its
// stderr in its termination message, on the node where the box's pod
// mounts its claim, made on the claims it names (one made with its
// labels), closed off the network, and removed once it ended; its exit
// code and stderr come back as an ExitError.
func TestRunHelperPod(t *testing.T) {
	data := compose.VolumeName("kb", compose.AgentVolume)
	snap := compose.SnapshotVolumeName("kb", "before")
	agent := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hbl-kb-agent-1", Namespace: helperNS, Labels: selectLabels("kb", "", compose.AgentService)},
		Spec: corev1.PodSpec{NodeName: "node-7", Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: objectName(data)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	// Left by a killed boxes: one ended, one still writing the claim.
	left := func(name string, phase corev1.PodPhase, readOnly bool) *corev1.Pod {
		l := selectLabels("kb", "", "")
		l[compose.OneOffLabel] = "1"
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: helperNS, Labels: l},
			Spec: corev1.PodSpec{
				Volumes: []corev1.Volume{{Name: "v0", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: objectName(data), ReadOnly: readOnly}}}},
				Containers: []corev1.Container{{Name: "helper", VolumeMounts: []corev1.VolumeMount{{Name: "v0", MountPath: "/to", ReadOnly: readOnly}}}},
			},
			Status: corev1.PodStatus{Phase: phase},
		}
	}
	labels := compose.Labels("kb")
	labels[compose.SnapshotLabel] = "before"
	labels[compose.SnapshotCreatedLabel] = "2026-12-07T10:00:00Z"

	e, core := helperEngine(t, exited0, claim(data, compose.Labels("kb")), agent,
		left("ended", corev1.PodSucceeded, false), left("reader", corev1.PodRunning, true))
	var made *corev1.Pod
	core.PrependReactor("create", "pods", func(a ktesting.Action) (bool, runtime.Object, error) {
		made = a.(ktesting.CreateAction).GetObject().(*corev1.Pod).DeepCopy()
		return false, nil, nil
	})
	out, err := e.RunHelper(context.Background(), engine.Helper{Box: "kb", Image: "sha256:abc", Snapshot: "before",
		Mounts: []engine.HelperMount{{Volume: data, Target: "/from", ReadOnly: true}, {Volume: snap, Target: "/to", Labels: labels}},
		Cmd:    []string{"cp", "-a", "/from/.", "/to/"}})
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "fake logs" {
		t.Errorf("stdout %q, want the pod's logs", out)
	}
	if made == nil {
		t.Fatal("no pod made")
	}
	c := made.Spec.Containers[0]
	if want := "sh -c exec \"$@\" 2>" + helperStderr + " sh cp -a /from/. /to/"; strings.Join(c.Command, " ") != want {
		t.Errorf("command %q, want %q", c.Command, want)
	}
	if c.Image != "sha256:abc" || c.ImagePullPolicy != corev1.PullNever || c.TerminationMessagePath != helperStderr ||
		c.SecurityContext == nil || *c.SecurityContext.RunAsUser != 0 || made.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("helper container: %+v, restart %s", c, made.Spec.RestartPolicy)
	}
	if made.Labels[compose.OneOffLabel] != "1" || made.Labels[compose.BoxLabel] != "kb" || made.Annotations[compose.SnapshotLabel] != "before" {
		t.Errorf("helper labels %v, annotations %v", made.Labels, made.Annotations)
	}
	a := made.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values[0] != "node-7" {
		t.Errorf("affinity %+v, want node-7, where the agent mounts the claim", a)
	}
	vols := map[string]corev1.PersistentVolumeClaimVolumeSource{}
	for _, v := range made.Spec.Volumes {
		vols[v.PersistentVolumeClaim.ClaimName] = *v.PersistentVolumeClaim
	}
	if !vols[objectName(data)].ReadOnly || vols[objectName(snap)].ReadOnly || len(vols) != 2 {
		t.Errorf("helper volumes %+v", vols)
	}
	pvc, err := core.CoreV1().PersistentVolumeClaims(helperNS).Get(context.Background(), objectName(snap), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the snapshot's claim was not made: %v", err)
	}
	if got := labelsOf(pvc.ObjectMeta); got[compose.SnapshotLabel] != "before" || got[compose.SnapshotCreatedLabel] != "2026-12-07T10:00:00Z" || pvc.Labels[compose.BoxLabel] != "kb" || nameOf(pvc.ObjectMeta) != snap {
		t.Errorf("the snapshot's claim: labels %v, annotations %v", pvc.Labels, pvc.Annotations)
	}
	var names []string
	for _, p := range podsOf(t, core) {
		names = append(names, p.Name)
	}
	if strings.Join(names, " ") != "hbl-kb-agent-1 reader" {
		t.Errorf("pods after the helper: %v; want the agent's and the reader left (the helper and the ended one removed)", names)
	}
	if _, err := core.NetworkingV1().NetworkPolicies(helperNS).Get(context.Background(), HelpersPolicy, metav1.GetOptions{}); err != nil {
		t.Errorf("no %s policy: %v", HelpersPolicy, err)
	}
	// Removing the volume removes the helper left reading it first.
	if err := e.RemoveVolume(context.Background(), data); err != nil {
		t.Fatal(err)
	}
	if p := podsOf(t, core); len(p) != 1 || p[0].Name != "hbl-kb-agent-1" {
		t.Errorf("pods after removing the volume: %d; want the agent's alone (the reader left removed)", len(p))
	}
	if c := claimsOf(t, core); strings.Join(c, " ") != objectName(snap) {
		t.Errorf("claims after removing %s: %v", data, c)
	}

	// A helper that writes the claim removes the one left writing it.
	e, core = helperEngine(t, exited0, claim(data, compose.Labels("kb")), left("writer", corev1.PodRunning, false))
	if _, err := e.RunHelper(context.Background(), engine.Helper{Box: "kb", Image: "sha256:abc", Mounts: []engine.HelperMount{{Volume: data, Target: "/to"}}, Cmd: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	if p := podsOf(t, core); len(p) != 0 {
		t.Errorf("pods left: %v; want the writer left by a killed boxes removed, and the helper", p)
	}

	// An exit code and its stderr.
	e, _ = helperEngine(t, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3, Message: "no data/ here\n"}}, claim(data, nil))
	_, err = e.RunHelper(context.Background(), engine.Helper{Box: "kb", Image: "sha256:abc", Mounts: []engine.HelperMount{{Volume: data, Target: "/from", ReadOnly: true}}, Cmd: []string{"false"}})
	var exit *engine.ExitError
	if !errors.As(err, &exit) || exit.Code != 3 || exit.Stderr != "no data/ here" {
		t.Errorf("err = %v, want an ExitError of code 3 with its stderr", err)
	}

	// An image the node does not have, and will never pull.
	e, _ = helperEngine(t, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: "image sha256:abc is not present"}})
	_, err = e.RunHelper(context.Background(), engine.Helper{Box: "kb", Image: "sha256:abc", Cmd: []string{"true"}})
	if err == nil || !strings.Contains(err.Error(), "cannot run: ErrImageNeverPull: image sha256:abc is not present") {
		t.Errorf("err = %v, want the reason the pod cannot run", err)
	}
}

// The pod of a helper is read as ended, waiting for good, or waiting.
func TestHelperState(t *testing.T) {
	waiting := func(reason string) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "m"}}}}}}
	}
	for _, tc := range []struct {
		name  string
		p     *corev1.Pod
		ended bool
		why   string
		final bool
	}{
		{"ended", &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{State: exited0}}}}, true, "", false},
		{"being made", waiting("ContainerCreating"), false, "ContainerCreating: m", false},
		{"never pulled", waiting("ErrImageNeverPull"), false, "ErrImageNeverPull: m", true},
		{"pull backing off", waiting("ImagePullBackOff"), false, "ImagePullBackOff: m", false},
		{"unschedulable", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Message: "0/1 nodes are available"}}}}, false, "not scheduled: 0/1 nodes are available", false},
		{"evicted", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "low on disk"}}, false, "the pod failed: Evicted low on disk", true},
	} {
		term, why, final := helperState(tc.p)
		if (term != nil) != tc.ended || why != tc.why || final != tc.final {
			t.Errorf("%s: ended %v, %q, final %v; want %v, %q, %v", tc.name, term != nil, why, final, tc.ended, tc.why, tc.final)
		}
	}
}

// TestControlPlaneURL: the API server's scheme and host, as the kubeconfig
// gives them (https when it names no scheme); nothing from an address
// that names no host.
func TestControlPlaneURL(t *testing.T) {
	for host, want := range map[string]string{
		"https://10.247.0.1:6443":          "https://10.247.0.1:6443",
		"https://api.example.com:443/base": "https://api.example.com:443",
		"10.247.0.1:6443":                  "https://10.247.0.1:6443",
		"https://":                         "",
		"":                                 "",
	} {
		e := &Engine{cfg: &rest.Config{Host: host}}
		if got := e.ControlPlaneURL(); got != want {
			t.Errorf("host %q: %q, want %q", host, got, want)
		}
	}
}
