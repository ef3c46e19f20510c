package kube

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	sandboxv1 "sigs.k8s.io/agent-sandbox/api/v1beta1"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/gate"
)

// VolumeRequest is the storage a box's volume claim asks for: a claim
// grows with the box's whole life in /data.
var VolumeRequest = resource.MustParse("10Gi")

// objects are what a box is made of on a cluster, from its compose
// project: the same containers, volumes and networks, in Kubernetes' words.
type objects struct {
	box       string
	sandboxes map[string]*sandboxv1.Sandbox // by service
	secrets   map[string]*corev1.Secret     // each service's environment
	services  map[string]*corev1.Service    // the addresses the agent reaches
	claims    []*corev1.PersistentVolumeClaim
	policies  []*networkingv1.NetworkPolicy
}

// reached are the services the agent reaches by name, with their ports:
// the gate's proxy and its routes (the credentials' and its health), the
// executor's MCP.
var reached = map[string][]int32{compose.GateService: {gate.ProxyPort, gate.RoutePort}, compose.ExecutorService: {compose.ExecutorPort}}

// boxOf is the box a project is the compose project of.
func boxOf(p *types.Project) string { return strings.TrimPrefix(p.Name, compose.ProjectPrefix) }

// selectLabels are the labels that select the box's objects (its service's
// too when service is not "").
func selectLabels(box, fleet, service string) map[string]string {
	l := map[string]string{compose.ManagedLabel: "1", compose.BoxLabel: box}
	if fleet != "" {
		l[compose.FleetLabel] = fleet
	}
	if service != "" {
		l[compose.ComposeServiceLabel] = service
	}
	return l
}

// meta is an object's metadata: its Kubernetes name for boxes' name, the
// selecting labels, and every other label boxes reads as an annotation.
func meta(name, namespace string, labels map[string]string, fleet, service string) metav1.ObjectMeta {
	box := labels[compose.BoxLabel]
	sel := selectLabels(box, fleet, service)
	if pool := labels[compose.PoolLabel]; pool != "" {
		sel[compose.PoolLabel] = pool
	}
	ann := map[string]string{NameAnnotation: name}
	for k, v := range labels {
		if _, ok := sel[k]; !ok {
			ann[k] = v
		}
	}
	return metav1.ObjectMeta{Name: objectName(name), Namespace: namespace, Labels: sel, Annotations: ann}
}

// objectsOf translates project p into the box's objects in namespace.
func objectsOf(p *types.Project, namespace string) (*objects, error) {
	box := boxOf(p)
	o := &objects{box: box, sandboxes: map[string]*sandboxv1.Sandbox{}, secrets: map[string]*corev1.Secret{}, services: map[string]*corev1.Service{}}
	fleet := ""
	for _, s := range p.Services {
		fleet = s.CustomLabels[compose.FleetLabel]
	}
	for key, v := range p.Volumes {
		labels := maps.Clone(v.CustomLabels)
		maps.Copy(labels, v.Labels)
		labels[compose.BoxLabel] = box
		labels[compose.ManagedLabel] = "1"
		labels[volumeKeyAnnotation] = key
		o.claims = append(o.claims, &corev1.PersistentVolumeClaim{
			ObjectMeta: meta(v.Name, namespace, labels, fleet, ""),
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: VolumeRequest}},
			},
		})
	}
	slices.SortFunc(o.claims, func(a, b *corev1.PersistentVolumeClaim) int { return strings.Compare(a.Name, b.Name) })
	o.policies = policiesOf(p, box, fleet, namespace)
	for name := range reached {
		if _, ok := p.Services[name]; !ok {
			continue
		}
		var ports []corev1.ServicePort
		for i, port := range reached[name] {
			n := name
			if i > 0 {
				n = fmt.Sprintf("%s-%d", name, port)
			}
			ports = append(ports, corev1.ServicePort{Name: n, Port: port, TargetPort: intstr.FromInt32(port), Protocol: corev1.ProtocolTCP})
		}
		o.services[name] = &corev1.Service{
			ObjectMeta: meta(compose.ProjectName(box)+"-"+name, namespace, map[string]string{compose.BoxLabel: box, compose.ManagedLabel: "1"}, fleet, name),
			Spec: corev1.ServiceSpec{
				Selector: selectLabels(box, fleet, name),
				Ports:    ports,
			},
		}
	}
	hashes, err := compose.ServiceHashes(p)
	if err != nil {
		return nil, err
	}
	for name, s := range p.Services {
		sb, secret, err := sandboxOf(p, s, box, fleet, namespace)
		if err != nil {
			return nil, fmt.Errorf("service %s: %w", name, err)
		}
		// The hash compose would write on the container: the planner
		// compares it, on every engine, with the project's.
		sb.Annotations[compose.ComposeConfigHashLabel] = hashes[name]
		o.sandboxes[name], o.secrets[name] = sb, secret
	}
	return o, nil
}

// volumeKeyAnnotation is a claim's volume as the project names it.
const volumeKeyAnnotation = "boxes.volume"

// sandboxOf is service s as a Sandbox: one pod of one container, its
// environment (the token in it) in a Secret of its own.
func sandboxOf(p *types.Project, s types.ServiceConfig, box, fleet, namespace string) (*sandboxv1.Sandbox, *corev1.Secret, error) {
	labels := map[string]string{}
	maps.Copy(labels, s.CustomLabels)
	maps.Copy(labels, s.Labels)
	name := s.ContainerName
	if name == "" {
		name = compose.ContainerName(box, s.Name)
	}
	m := meta(name, namespace, labels, fleet, s.Name)
	m.Annotations[ImageAnnotation] = s.Image
	var mounts []string
	c := corev1.Container{
		Name:            s.Name,
		Image:           s.Image,
		ImagePullPolicy: pullPolicy(s),
		Command:         s.Entrypoint,
		Args:            s.Command,
		WorkingDir:      s.WorkingDir,
		EnvFrom:         []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: m.Name}}}},
		SecurityContext: securityOf(s),
		Resources:       resourcesOf(s),
	}
	var volumes []corev1.Volume
	for i, v := range s.Volumes {
		if v.Type != types.VolumeTypeVolume {
			return nil, nil, fmt.Errorf("a %s mount has no place on a cluster", v.Type)
		}
		vol, ok := p.Volumes[v.Source]
		if !ok {
			return nil, nil, fmt.Errorf("volume %s is not the project's", v.Source)
		}
		podName := "v" + strconv.Itoa(i)
		volumes = append(volumes, corev1.Volume{Name: podName, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: objectName(vol.Name)}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: podName, MountPath: v.Target, ReadOnly: v.ReadOnly})
		mounts = append(mounts, vol.Name+":"+v.Target)
	}
	if s.ReadOnly {
		// A read-only root still writes its temporary files.
		volumes = append(volumes, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"})
	}
	m.Annotations[MountsAnnotation] = strings.Join(mounts, ",")
	var networks []string
	for n := range s.Networks {
		if nw, ok := p.Networks[n]; ok {
			networks = append(networks, nw.Name)
		}
	}
	slices.Sort(networks)
	m.Annotations[NetworksAnnotation] = strings.Join(networks, ",")
	if hc := s.HealthCheck; hc != nil && !hc.Disable && len(hc.Test) > 1 && (hc.Test[0] == "CMD" || hc.Test[0] == "CMD-SHELL") {
		cmd := hc.Test[1:]
		if hc.Test[0] == "CMD-SHELL" {
			cmd = []string{"/bin/sh", "-c", strings.Join(hc.Test[1:], " ")}
		}
		c.ReadinessProbe = &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}},
			PeriodSeconds:    1,
			TimeoutSeconds:   seconds(hc.Timeout, 5),
			FailureThreshold: 3,
		}
	}
	env := map[string]string{}
	for k, v := range s.Environment {
		if v != nil {
			env[k] = *v
		}
	}
	secret := &corev1.Secret{ObjectMeta: *m.DeepCopy(), StringData: env, Type: corev1.SecretTypeOpaque}
	secret.Annotations = map[string]string{NameAnnotation: name}
	pod := corev1.PodSpec{
		Containers:                    []corev1.Container{c},
		Volumes:                       volumes,
		Hostname:                      s.Hostname,
		RestartPolicy:                 corev1.RestartPolicyAlways,
		AutomountServiceAccountToken:  new(bool),
		EnableServiceLinks:            new(bool),
		TerminationGracePeriodSeconds: gracePeriod(s),
	}
	if s.Runtime != "" && s.Runtime != "runc" {
		rc := s.Runtime
		pod.RuntimeClassName = &rc
	}
	if len(s.DNS) > 0 {
		pod.DNSPolicy = corev1.DNSNone
		pod.DNSConfig = &corev1.PodDNSConfig{Nameservers: s.DNS}
	}
	podLabels := maps.Clone(m.Labels)
	sb := &sandboxv1.Sandbox{
		TypeMeta:   metav1.TypeMeta{APIVersion: sandboxv1.GroupVersion.String(), Kind: sandboxv1.SandboxKind},
		ObjectMeta: m,
		Spec: sandboxv1.SandboxSpec{
			SandboxBlueprint: sandboxv1.SandboxBlueprint{
				PodTemplate: sandboxv1.PodTemplate{ObjectMeta: sandboxv1.PodMetadata{Labels: podLabels}, Spec: pod},
			},
			OperatingMode: sandboxv1.SandboxOperatingModeSuspended,
		},
	}
	return sb, secret, nil
}

// pullPolicy: an image by ID is on the cluster's nodes already (the
// engine loads it); one by reference is pulled when missing.
func pullPolicy(s types.ServiceConfig) corev1.PullPolicy {
	if strings.HasPrefix(s.Image, "sha256:") || s.PullPolicy == types.PullPolicyNever {
		return corev1.PullNever
	}
	return corev1.PullIfNotPresent
}

func securityOf(s types.ServiceConfig) *corev1.SecurityContext {
	sc := &corev1.SecurityContext{}
	if s.ReadOnly {
		sc.ReadOnlyRootFilesystem = &s.ReadOnly
	}
	if s.Privileged {
		sc.Privileged = &s.Privileged
	}
	for _, o := range s.SecurityOpt {
		if o == "no-new-privileges:true" || o == "no-new-privileges" {
			sc.AllowPrivilegeEscalation = new(bool)
		}
	}
	if uid, gid, ok := strings.Cut(s.User, ":"); s.User != "" {
		if n, err := strconv.ParseInt(uid, 10, 64); err == nil {
			sc.RunAsUser = &n
		}
		if n, err := strconv.ParseInt(gid, 10, 64); ok && err == nil {
			sc.RunAsGroup = &n
		}
	}
	caps := &corev1.Capabilities{}
	for _, c := range s.CapDrop {
		caps.Drop = append(caps.Drop, corev1.Capability(c))
	}
	for _, c := range s.CapAdd {
		caps.Add = append(caps.Add, corev1.Capability(c))
	}
	if len(caps.Drop)+len(caps.Add) > 0 {
		sc.Capabilities = caps
	}
	return sc
}

func resourcesOf(s types.ServiceConfig) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{}
	limits := corev1.ResourceList{}
	if s.CPUS > 0 {
		limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(float64(s.CPUS)*1000), resource.DecimalSI)
	}
	if s.MemLimit > 0 {
		limits[corev1.ResourceMemory] = *resource.NewQuantity(int64(s.MemLimit), resource.BinarySI)
	}
	if len(limits) > 0 {
		r.Limits = limits
	}
	return r
}

func seconds(d *types.Duration, def int32) int32 {
	if d == nil || *d == 0 {
		return def
	}
	return int32(max(1, time.Duration(*d)/time.Second))
}

func gracePeriod(s types.ServiceConfig) *int64 {
	n := int64(10)
	if s.StopGracePeriod != nil {
		n = int64(max(1, time.Duration(*s.StopGracePeriod)/time.Second))
	}
	return &n
}

// policiesOf are the box's networks as NetworkPolicies, named after them
// (the planner sees them as the box's networks). The inside network's
// closes the agent: it takes nothing in, and sends only to its own box's
// gate and executor, on their ports. The outer network's lets only the
// agent reach the gate and executor; their own way out stays open (the
// gate enforces egress:).
func policiesOf(p *types.Project, box, fleet, namespace string) []*networkingv1.NetworkPolicy {
	var out []*networkingv1.NetworkPolicy
	agent := metav1.LabelSelector{MatchLabels: map[string]string{compose.BoxLabel: box, compose.ManagedLabel: "1", compose.ComposeServiceLabel: compose.AgentService}}
	tcp := corev1.ProtocolTCP
	for key, n := range p.Networks {
		labels := maps.Clone(n.CustomLabels)
		maps.Copy(labels, n.Labels)
		labels[compose.BoxLabel] = box
		labels[compose.ManagedLabel] = "1"
		np := &networkingv1.NetworkPolicy{ObjectMeta: meta(n.Name, namespace, labels, fleet, "")}
		if key == compose.InsideNetwork {
			np.Spec = networkingv1.NetworkPolicySpec{
				PodSelector: agent,
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			}
			for _, svc := range slices.Sorted(maps.Keys(reached)) {
				var ports []networkingv1.NetworkPolicyPort
				for _, p := range reached[svc] {
					port := intstr.FromInt32(p)
					ports = append(ports, networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: &port})
				}
				np.Spec.Egress = append(np.Spec.Egress, networkingv1.NetworkPolicyEgressRule{
					To:    []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{compose.BoxLabel: box, compose.ManagedLabel: "1", compose.ComposeServiceLabel: svc}}}},
					Ports: ports,
				})
			}
		} else {
			np.Spec = networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{
					MatchLabels:      map[string]string{compose.BoxLabel: box, compose.ManagedLabel: "1"},
					MatchExpressions: []metav1.LabelSelectorRequirement{{Key: compose.ComposeServiceLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{compose.ExecutorService, compose.GateService}}},
				},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
				Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &agent}}}},
			}
		}
		out = append(out, np)
	}
	slices.SortFunc(out, func(a, b *networkingv1.NetworkPolicy) int { return strings.Compare(a.Name, b.Name) })
	return out
}
