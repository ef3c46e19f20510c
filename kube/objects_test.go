package kube

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sandboxv1 "sigs.k8s.io/agent-sandbox/api/v1beta1"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/spec"
)

const testImage = "sha256:1111111111111111111111111111111111111111111111111111111111111111"

func testObjects(t *testing.T) *objects {
	t.Helper()
	b := spec.Box{Name: "web", Fleet: "team", Settings: spec.Settings{CPUs: 2, Memory: 1 << 30}}
	p, err := compose.Project(compose.Input{Box: b, Image: testImage, Token: "tok-123", WorkDir: "/w", ConfigFile: "/w/boxes.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	o, err := objectsOf(p, "ns")
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// A box's project becomes three suspended Sandboxes, their Secrets, two
// volume claims, the Services of the gate and the executor, and the two
// networks as NetworkPolicies, all selected by the box's labels.
func TestObjectsOfABox(t *testing.T) {
	o := testObjects(t)
	hashes := map[string]string{}
	{
		b := spec.Box{Name: "web", Fleet: "team", Settings: spec.Settings{CPUs: 2, Memory: 1 << 30}}
		p, _ := compose.Project(compose.Input{Box: b, Image: testImage, Token: "tok-123", WorkDir: "/w", ConfigFile: "/w/boxes.yaml"})
		hashes, _ = compose.ServiceHashes(p)
	}
	for _, svc := range compose.Services {
		sb := o.sandboxes[svc]
		if sb == nil {
			t.Fatalf("no sandbox for %s", svc)
		}
		if want := objectName(compose.ContainerName("web", svc)); sb.Name != want || sb.Annotations[NameAnnotation] != compose.ContainerName("web", svc) {
			t.Errorf("%s: name %s (boxes name %q), want %s", svc, sb.Name, sb.Annotations[NameAnnotation], want)
		}
		if sb.Spec.OperatingMode != sandboxv1.SandboxOperatingModeSuspended {
			t.Errorf("%s: made %s, want suspended until started", svc, sb.Spec.OperatingMode)
		}
		if sb.Labels[compose.BoxLabel] != "web" || sb.Labels[compose.FleetLabel] != "team" || sb.Labels[compose.ComposeServiceLabel] != svc || sb.Labels[compose.ManagedLabel] != "1" {
			t.Errorf("%s: labels %v", svc, sb.Labels)
		}
		if got := sb.Annotations[compose.ComposeConfigHashLabel]; got == "" || got != hashes[svc] {
			t.Errorf("%s: config hash %q, want compose's %q", svc, got, hashes[svc])
		}
		if sb.Annotations[ImageAnnotation] != testImage {
			t.Errorf("%s: image annotation %q", svc, sb.Annotations[ImageAnnotation])
		}
		pod := sb.Spec.PodTemplate
		if pod.ObjectMeta.Labels[compose.ComposeServiceLabel] != svc {
			t.Errorf("%s: pod labels %v", svc, pod.ObjectMeta.Labels)
		}
		c := pod.Spec.Containers[0]
		if c.ImagePullPolicy != corev1.PullNever || c.Image != testImage {
			t.Errorf("%s: image %s pulled %s, want the ID never pulled", svc, c.Image, c.ImagePullPolicy)
		}
		if len(c.Env) != 0 || len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef.Name != sb.Name {
			t.Errorf("%s: environment %v / %v, want only its Secret", svc, c.Env, c.EnvFrom)
		}
		if c.ReadinessProbe == nil || c.ReadinessProbe.Exec == nil {
			t.Errorf("%s: no readiness probe from the health check", svc)
		}
		if pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken {
			t.Errorf("%s: the pod mounts a service account token", svc)
		}
		if svc != compose.GateService {
			if got := c.Resources.Limits.Memory().Value(); got != 1<<30 {
				t.Errorf("%s: memory limit %d", svc, got)
			}
		}
		secret := o.secrets[svc]
		if svc != compose.GateService && secret.StringData[compose.TokenVar] != "tok-123" {
			t.Errorf("%s: the Secret has no token", svc)
		}
	}
	agent := o.sandboxes[compose.AgentService].Spec.PodTemplate.Spec
	if m := agent.Containers[0].VolumeMounts; len(m) != 1 || m[0].MountPath != "/data" {
		t.Errorf("agent mounts %v, want /data", m)
	}
	if v := agent.Volumes[0].PersistentVolumeClaim; v == nil || v.ClaimName != objectName(compose.VolumeName("web", compose.AgentVolume)) {
		t.Errorf("agent's /data is %v, want its own claim", agent.Volumes)
	}
	if len(o.claims) != 2 || o.claims[0].Annotations[NameAnnotation] != compose.VolumeName("web", compose.AgentVolume) {
		t.Errorf("claims %d, first %v", len(o.claims), o.claims[0].Annotations)
	}
	if len(o.services) != 2 || o.services[compose.GateService] == nil || o.services[compose.ExecutorService] == nil {
		t.Errorf("services %v, want the gate's and the executor's", o.services)
	}
	if got := o.services[compose.AgentService]; got != nil {
		t.Errorf("the agent has a Service: nothing reaches into it")
	}
}

// The inside network's policy closes the agent: nothing in, and out only
// to its own box's gate and executor, on their ports; the outer one lets
// only the agent reach those two.
func TestObjectsDoor(t *testing.T) {
	o := testObjects(t)
	byName := map[string]*networkingv1.NetworkPolicy{}
	for _, np := range o.policies {
		byName[np.Annotations[NameAnnotation]] = np
	}
	inside := byName[compose.InsideNetworkName("web")]
	outer := byName[compose.NetworkName("web")]
	if inside == nil || outer == nil || len(o.policies) != 2 {
		t.Fatalf("policies %v, want the box's two networks", byName)
	}
	sel := inside.Spec.PodSelector.MatchLabels
	if sel[compose.ComposeServiceLabel] != compose.AgentService || sel[compose.BoxLabel] != "web" {
		t.Errorf("inside policy selects %v, want the box's agent", sel)
	}
	if len(inside.Spec.PolicyTypes) != 2 || len(inside.Spec.Ingress) != 0 {
		t.Errorf("inside policy types %v, ingress %v: want ingress and egress, nothing let in", inside.Spec.PolicyTypes, inside.Spec.Ingress)
	}
	ports := map[string][]int32{}
	for _, r := range inside.Spec.Egress {
		if len(r.To) != 1 || r.To[0].PodSelector == nil || r.To[0].IPBlock != nil || r.To[0].NamespaceSelector != nil {
			t.Fatalf("egress rule %v reaches beyond a pod of the box", r)
		}
		to := r.To[0].PodSelector.MatchLabels
		if to[compose.BoxLabel] != "web" {
			t.Errorf("egress to %v: another box", to)
		}
		for _, p := range r.Ports {
			ports[to[compose.ComposeServiceLabel]] = append(ports[to[compose.ComposeServiceLabel]], p.Port.IntVal)
		}
	}
	if len(ports) != 2 || !slices.Equal(ports[compose.GateService], []int32{3128, 3129}) || !slices.Equal(ports[compose.ExecutorService], []int32{compose.ExecutorPort}) {
		t.Errorf("agent may send to %v, want the gate's proxy and routes and the executor's port alone", ports)
	}
	// The Services the agent reaches them by carry the same ports.
	for svc, want := range map[string][]int32{compose.GateService: {3128, 3129}, compose.ExecutorService: {compose.ExecutorPort}} {
		var got []int32
		for _, p := range o.services[svc].Spec.Ports {
			got = append(got, p.Port)
		}
		if !slices.Equal(got, want) {
			t.Errorf("Service of %s: ports %v, want %v", svc, got, want)
		}
	}
	if len(outer.Spec.PolicyTypes) != 1 || outer.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress {
		t.Errorf("outer policy types %v: the gate and executor keep their way out", outer.Spec.PolicyTypes)
	}
	from := outer.Spec.Ingress[0].From[0].PodSelector.MatchLabels
	if from[compose.ComposeServiceLabel] != compose.AgentService || from[compose.BoxLabel] != "web" {
		t.Errorf("outer policy lets in %v, want the box's agent alone", from)
	}
}

func TestPodState(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	for _, tc := range []struct {
		name     string
		pod      corev1.Pod
		want     engine.State
		code     int
		restarts int
	}{
		{"pending, no status", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}, engine.Created, 0, 0},
		{"creating", corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}}, engine.Created, 0, 0},
		{"running", corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{State: running}}}}, engine.Running, 0, 0},
		{"crash looping", corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			RestartCount: 4, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3}},
		}}}}, engine.Restarting, 3, 4},
		{"image missing", corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull"}}}}}}, engine.Dead, 0, 0},
		{"secret not synced yet: the kubelet retries", corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: "failed to sync secret cache: timed out waiting for the condition"}}}}}}, engine.Created, 0, 0},
		{"ended", corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137}}}}}}, engine.Exited, 137, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state, code, restarts, _ := podState(&tc.pod)
			if state != tc.want || code != tc.code || restarts != tc.restarts {
				t.Errorf("state %s exit %d restarts %d, want %s %d %d", state, code, restarts, tc.want, tc.code, tc.restarts)
			}
		})
	}
}

// A listing reads back as the planner's observation: the Sandboxes as the
// box's containers (a suspended one stopped), the claims as its volumes
// under boxes' names, the policies as its networks, ConfigMaps as lease marks.
func TestListingObserved(t *testing.T) {
	o := testObjects(t)
	var l listing
	for _, svc := range compose.Services {
		sb := o.sandboxes[svc].DeepCopy()
		if svc != compose.AgentService {
			sb.Spec.OperatingMode = sandboxv1.SandboxOperatingModeRunning
			l.pods = append(l.pods, corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: sb.Name, OwnerReferences: []metav1.OwnerReference{{APIVersion: "agents.x-k8s.io/v1beta1", Kind: "Sandbox", Name: sb.Name}}},
				Status:     corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
			})
		}
		l.sandboxes = append(l.sandboxes, *sb)
	}
	for _, c := range o.claims {
		l.claims = append(l.claims, *c)
	}
	for _, np := range o.policies {
		l.policies = append(l.policies, *np)
	}
	l.marks = []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "hbl-web-lease", Labels: compose.LeaseLabels(engine.LeaseMark{Kind: engine.LeaseClaim, Box: "web", Fleet: "team", Pool: "p", Lease: "l1"})}}}
	got := l.observed("k8s")
	got.Sort()
	r := got.Of("web")
	if len(r.Containers) != 3 || len(r.Volumes) != 2 || len(r.Networks) != 2 {
		t.Fatalf("web has %s, want 3 containers, 2 networks, 2 volumes", r.Counts())
	}
	states := map[string]engine.State{}
	for _, c := range r.Containers {
		states[c.Service] = c.State
		if c.Name != compose.ContainerName("web", c.Service) || c.Fleet != "team" || c.Image != testImage || c.ConfigHash == "" {
			t.Errorf("container %+v", c)
		}
	}
	if states[compose.AgentService] != engine.Exited || states[compose.GateService] != engine.Running {
		t.Errorf("states %v, want the suspended agent exited, the gate running", states)
	}
	if agent, _ := r.Container(compose.AgentService); len(agent.Mounts) != 1 || agent.Mounts[0].Volume != compose.VolumeName("web", compose.AgentVolume) {
		t.Errorf("agent mounts %v", agent.Mounts)
	}
	names := []string{r.Volumes[0].Name, r.Networks[0].Name, r.Networks[1].Name}
	if !strings.Contains(names[0], "_") {
		t.Errorf("volume read back as %q, want boxes' name", names[0])
	}
	if len(got.LeaseMarks) != 1 || got.LeaseMarks[0].Box != "web" || got.LeaseMarks[0].Lease != "l1" || got.LeaseMarks[0].Kind != engine.LeaseClaim {
		t.Errorf("lease marks %+v", got.LeaseMarks)
	}
}
