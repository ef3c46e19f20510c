package testkube_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hermes-box/boxes/internal/testkube"
)

// The test image of scripts/test-image.sh, which scripts/kube/up.sh imports
// into the cluster, with the Executor stand-in as /usr/local/bin/executor.
const testImage = "hermes-box-lite:test"

const ns = "it-kube"

// kubectl runs kubectl against the test cluster.
type kubectl struct {
	t               *testing.T
	bin, kubeconfig string
}

func (k kubectl) run(ctx context.Context, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, k.bin, append([]string{"--kubeconfig", k.kubeconfig}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// must runs kubectl with a minute's limit and fails the test on error.
func (k kubectl) must(stdin string, args ...string) string {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := k.run(ctx, stdin, args...)
	if err != nil {
		k.t.Fatal(err)
	}
	return out
}

// ready waits up to 90 s for objs (in ns) to be Ready; else it fails the
// test with what the namespace's pods and events say (an image missing
// from the cluster shows as ErrImageNeverPull: make test-image, then
// scripts/kube/up.sh imports it).
func (k kubectl) ready(objs ...string) {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"-n", ns, "wait", "--for", "condition=Ready", "--timeout", "90s"}, objs...)
	if _, err := k.run(ctx, "", args...); err != nil {
		pods, _ := k.run(ctx, "", "-n", ns, "get", "pods", "-o", "wide")
		events, _ := k.run(ctx, "", "-n", ns, "get", "events", "--sort-by", ".lastTimestamp")
		k.t.Fatalf("%v\npods:\n%s\nevents:\n%s", err, pods, events)
	}
}

// TestIntegrationKubeCluster proves the test cluster make test starts: a pod
// of the imported test image runs and kubectl exec reaches it; an
// agent-sandbox Sandbox, its volume claimed from the default StorageClass,
// gets Ready; and a NetworkPolicy denying a pod's egress is enforced: a
// connection to another pod's port that worked before the policy fails
// under it, and works again once it is deleted.
//
// Real cluster: that pods start on the cluster's containerd from an image
// no registry serves, that the agent-sandbox controller reconciles, and
// that kube-router really drops the traffic.
func TestIntegrationKubeCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("real cluster: skipped under -short")
	}
	k := kubectl{t: t, bin: testkube.Kubectl(t), kubeconfig: testkube.Config(t)}

	// What a failed run left, then what this one makes, removed by name
	// at the end, also on failure.
	remove := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		t0 := time.Now()
		defer func() { t.Logf("removed namespace %s in %s", ns, time.Since(t0).Round(time.Millisecond)) }()
		for _, obj := range []string{"networkpolicy/client-no-egress", "sandbox/it-sandbox", "pvc/data-it-sandbox", "pod/server", "pod/client"} {
			if out, err := k.run(ctx, "", "-n", ns, "delete", obj, "--ignore-not-found", "--grace-period", "1"); err != nil {
				t.Logf("cleanup: %v %s", err, out)
			}
		}
		if out, err := k.run(ctx, "", "delete", "namespace", ns, "--ignore-not-found", "--timeout", "90s"); err != nil {
			t.Logf("cleanup: %v %s", err, out)
		}
	}
	remove()
	t.Cleanup(remove)

	started := time.Now()
	k.must(fmt.Sprintf(pods, ns, testImage), "apply", "-f", "-")
	k.ready("pod/server", "pod/client")
	t.Logf("2 pods of %s Ready in %s", testImage, time.Since(started).Round(time.Millisecond))

	if got := strings.TrimSpace(k.must("", "-n", ns, "exec", "client", "--", "cat", "/opt/hermes-box/test-variant")); got != "1" {
		t.Fatalf("kubectl exec cat /opt/hermes-box/test-variant = %q, want 1 (the test image)", got)
	}

	serverIP := strings.TrimSpace(k.must("", "-n", ns, "get", "pod", "server", "-o", "jsonpath={.status.podIP}"))
	if serverIP == "" {
		t.Fatal("the server pod has no IP")
	}
	// reaches: the client pod opens a connection to the server's port and
	// gets its answer.
	reaches := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, err := k.run(ctx, "", "-n", ns, "exec", "client", "--",
			"curl", "-sS", "--max-time", "3", "http://"+serverIP+":8080/healthz")
		return err == nil && strings.TrimSpace(out) == "ok"
	}
	// settles: reaches() turns want within 20 s (a policy takes effect
	// when the enforcer has synced it).
	settles := func(want bool) (bool, time.Duration) {
		t0 := time.Now()
		for {
			if reaches() == want {
				return true, time.Since(t0)
			}
			if time.Since(t0) > 20*time.Second {
				return false, time.Since(t0)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	if !reaches() {
		t.Fatalf("without a policy, client -> server %s:8080 fails", serverIP)
	}

	k.must(fmt.Sprintf(noEgress, ns), "apply", "-f", "-")
	if ok, took := settles(false); !ok {
		t.Fatalf("with egress denied, client -> server %s:8080 still works after %s", serverIP, took.Round(time.Millisecond))
	} else {
		t.Logf("egress denied: client -> server blocked after %s", took.Round(time.Millisecond))
	}
	k.must("", "-n", ns, "delete", "networkpolicy", "client-no-egress", "--wait")
	if ok, took := settles(true); !ok {
		t.Fatalf("policy deleted, client -> server %s:8080 still fails after %s", serverIP, took.Round(time.Millisecond))
	} else {
		t.Logf("policy deleted: client -> server works again after %s", took.Round(time.Millisecond))
	}

	started = time.Now()
	k.must(fmt.Sprintf(sandbox, ns, testImage), "apply", "-f", "-")
	k.ready("sandbox/it-sandbox")
	t.Logf("Sandbox Ready in %s", time.Since(started).Round(time.Millisecond))
	claims := k.must("", "-n", ns, "get", "pvc", "-o", "jsonpath={range .items[*]}{.metadata.name}={.status.phase} {end}")
	if !strings.Contains(claims, "=Bound") {
		t.Errorf("the Sandbox's volume claim is not bound: %q", claims)
	}
	if got := strings.TrimSpace(k.must("", "-n", ns, "exec", "it-sandbox", "--", "cat", "/data/mark")); got != "sandbox" {
		t.Errorf("the Sandbox's pod: /data/mark = %q, want sandbox", got)
	}
}

// pods: a server (the Executor stand-in on :8080) and a client; %[1]s is
// the namespace, %[2]s the image.
const pods = `
apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: v1
kind: Pod
metadata: {name: server, namespace: %[1]s, labels: {role: server}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: executor
    image: %[2]s
    imagePullPolicy: Never
    command: [/usr/local/bin/executor, --listen, "0.0.0.0:8080"]
    env: [{name: EXECUTOR_TOKEN, value: not-a-secret}]
    readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: %[1]s, labels: {role: client}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: client, image: %[2]s, imagePullPolicy: Never, command: [sleep, infinity]}
`

// noEgress: the client may open no connection at all.
const noEgress = `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: client-no-egress, namespace: %[1]s}
spec:
  podSelector: {matchLabels: {role: client}}
  policyTypes: [Egress]
`

// sandbox: one agent-sandbox Sandbox with a volume from the default
// StorageClass, on which it leaves a mark.
const sandbox = `
apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata: {name: it-sandbox, namespace: %[1]s}
spec:
  podTemplate:
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: agent
        image: %[2]s
        imagePullPolicy: Never
        command: [sh, -c, "echo sandbox > /data/mark && exec sleep infinity"]
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
`
