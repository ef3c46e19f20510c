package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/testkube"
	"github.com/hermes-box/boxes/spec"
)

// testCluster is the running test cluster's kubeconfig and its context,
// or a skip.
func testCluster(t *testing.T) (kubeconfig, context string) {
	t.Helper()
	if testing.Short() {
		t.Skip("real cluster: skipped under -short")
	}
	kubeconfig = testkube.Config(t)
	return kubeconfig, currentContext(t, kubeconfig)
}

// currentContext is kubeconfig's current context.
func currentContext(t testing.TB, kubeconfig string) string {
	t.Helper()
	raw, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return raw.CurrentContext
}

// kubectl runs kubectl against the test cluster.
func kubectl(t testing.TB, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, testkube.Kubectl(t), append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}

// namespace makes a namespace for one test, deleted at its end whatever
// happened (with everything the test made in it).
func namespace(t testing.TB, kubeconfig, name string) {
	t.Helper()
	drop := func() {
		if out, err := kubectl(t, kubeconfig, "delete", "namespace", name, "--ignore-not-found", "--wait=true", "--timeout=120s"); err != nil {
			t.Logf("removing namespace %s: %v %s", name, err, out)
		}
	}
	drop()
	if out, err := kubectl(t, kubeconfig, "create", "namespace", name); err != nil {
		t.Fatalf("creating namespace %s: %v %s", name, err, out)
	}
	t.Cleanup(drop)
}

// TestIntegrationKubeConnect: Connect refuses, naming the host and saying
// what to do, a namespace that does not exist, a context the kubeconfig
// lacks, credentials the API server refuses; an API server that cannot be
// reached is engine.ErrUnreachable. Real cluster: the API server's own
// answers.
func TestIntegrationKubeConnect(t *testing.T) {
	kubeconfig, ctxName := testCluster(t)
	ctx := context.Background()
	host := func(k spec.Kubernetes) spec.Host { return spec.Host{Name: "k8s", Kubernetes: &k} }

	e, err := Connect(ctx, host(spec.Kubernetes{Context: ctxName, Namespace: "default", Kubeconfig: kubeconfig}))
	if err != nil {
		t.Fatalf("a good host refused: %v", err)
	}
	e.Close()

	for _, tc := range []struct {
		name string
		k    spec.Kubernetes
		want string
		hint string
	}{
		{"namespace", spec.Kubernetes{Context: ctxName, Namespace: "it-no-such-ns", Kubeconfig: kubeconfig}, "namespace it-no-such-ns does not exist", "create namespace it-no-such-ns"},
		{"context", spec.Kubernetes{Context: "it-nope", Namespace: "default", Kubeconfig: kubeconfig}, `has no context "it-nope"`, "get-contexts"},
		{"credentials", spec.Kubernetes{Context: ctxName, Namespace: "default", Kubeconfig: badCredentials(t, kubeconfig)}, "refused the credentials of context " + ctxName, "renew them"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Connect(ctx, host(tc.k))
			var he *HostError
			if !errors.As(err, &he) || !strings.Contains(err.Error(), "host k8s") || !strings.Contains(err.Error(), tc.want) || !strings.Contains(strings.Join(he.HintLines(), " "), tc.hint) {
				t.Fatalf("err = %v (hint %v), want %q with a hint naming %q", err, he, tc.want, tc.hint)
			}
			if errors.Is(err, engine.ErrUnreachable) {
				t.Errorf("%v counted as an unreachable engine", err)
			}
		})
	}
	t.Run("gone", func(t *testing.T) {
		_, err := Connect(ctx, host(spec.Kubernetes{Context: ctxName, Namespace: "default", Kubeconfig: withServer(t, kubeconfig, "https://127.0.0.1:1")}))
		if !errors.Is(err, engine.ErrUnreachable) || !strings.Contains(err.Error(), "host k8s (https://127.0.0.1:1)") {
			t.Fatalf("err = %v, want an unreachable host k8s", err)
		}
	})
}

// badCredentials is a copy of kubeconfig whose user has a token the API
// server does not know, and no certificate.
func badCredentials(t testing.TB, kubeconfig string) string {
	raw, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range raw.AuthInfos {
		u.ClientCertificate, u.ClientKey, u.ClientCertificateData, u.ClientKeyData = "", "", nil, nil
		u.Token = "not-a-token-the-cluster-knows"
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*raw, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// withServer is a copy of kubeconfig whose clusters are at server.
func withServer(t testing.TB, kubeconfig, server string) string {
	raw, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range raw.Clusters {
		c.Server = server
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*raw, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// countingEngine is a test engine whose API requests are counted.
func countingEngine(t testing.TB, kubeconfig, ctxName, ns string) (*Engine, *atomic.Int64) {
	t.Helper()
	k := spec.Kubernetes{Context: ctxName, Namespace: ns, Kubeconfig: kubeconfig}
	cfg, herr := restConfig(k)
	if herr != nil {
		t.Fatal(herr)
	}
	var n atomic.Int64
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			n.Add(1)
			return rt.RoundTrip(r)
		})
	})
	e, err := newEngine(spec.Host{Name: "k8s", Kubernetes: &k}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.check(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e, &n
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// testBoxImage is the test image's ID, which the test cluster's node was
// given (scripts/kube/up.sh imports it).
func testBoxImage(t testing.TB) string {
	t.Helper()
	ref := os.Getenv("BOXES_TEST_IMAGE")
	if ref == "" {
		ref = "hermes-box-lite:test"
	}
	out, err := exec.Command("docker", "image", "inspect", "-f", "{{.Id}}", ref).Output()
	if err != nil {
		t.Fatalf("test image %s: %v (make test-image)", ref, err)
	}
	return strings.TrimSpace(string(out))
}

// boxProject is box name's project with token.
func boxProject(t testing.TB, name, image, token string) *types.Project {
	t.Helper()
	p, err := compose.Project(compose.Input{Box: spec.Box{Name: name, Fleet: "it-kube"}, Image: image, Token: token, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestIntegrationKubeBox: a box made on the cluster runs (its agent's hb
// init done, its gate answering, its executor answering an authenticated
// MCP initialize through a port-forward), its /data outlives a stop, a
// start and the replacement of its gate, and goes only with its claim;
// Observe reads any number of boxes in the same number of API calls.
// Real cluster: agent-sandbox's controller, the kubelet and containerd
// decide all of it.
func TestIntegrationKubeBox(t *testing.T) {
	kubeconfig, ctxName := testCluster(t)
	t.Parallel() // a namespace of its own
	const ns = "it-kube-box"
	namespace(t, kubeconfig, ns)
	e, calls := countingEngine(t, kubeconfig, ctxName, ns)
	ctx := context.Background()
	image := testBoxImage(t)

	observeCalls := func() (*engine.Observed, int64) {
		before := calls.Load()
		o, err := e.Observe(ctx, image)
		if err != nil {
			t.Fatal(err)
		}
		return o, calls.Load() - before
	}
	_, empty := observeCalls()

	p := boxProject(t, "kb", image, "tok-kb")
	began := time.Now()
	step := func(what string) { t.Logf("%s: %s in", what, time.Since(began).Round(time.Millisecond)) }
	if err := e.Create(ctx, p, false); err != nil {
		t.Fatal(err)
	}
	step("created")
	if err := e.Start(ctx, p); err != nil {
		t.Fatal(err)
	}
	step("started")
	if err := e.WaitInit(ctx, "kb"); err != nil {
		t.Fatal(err)
	}
	step("agent and gate ready")
	where, err := e.WaitReady(ctx, "kb", "tok-kb")
	if err != nil {
		t.Fatal(err)
	}
	step("executor answers")
	t.Logf("executor: %s", where)

	o, one := observeCalls()
	r := o.Of("kb")
	if len(r.Containers) != 3 || len(r.Volumes) != 2 || len(r.Networks) != 2 {
		t.Fatalf("kb has %s", r.Counts())
	}
	for _, c := range r.Containers {
		if c.State != engine.Running || c.Image != image {
			t.Errorf("%s: %s, image %s", c.Service, c.State, c.Image)
		}
	}
	if one != empty {
		t.Errorf("Observe took %d calls with a box, %d without", one, empty)
	}

	hashes, err := compose.ServiceHashes(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Containers {
		if c.ConfigHash != hashes[c.Service] {
			t.Errorf("%s reads back config hash %q, want the project's %q", c.Service, c.ConfigHash, hashes[c.Service])
		}
	}
	// A Sandbox edited by hand no longer has the hash it was made with.
	gate, _ := r.Container(compose.GateService)
	if out, err := kubectl(t, kubeconfig, "-n", ns, "patch", "sandbox", gate.ID, "--type", "merge", "-p", `{"spec":{"podTemplate":{"metadata":{"labels":{"edited":"by-hand"}}}}}`); err != nil {
		t.Fatalf("editing the gate: %v %s", err, out)
	}
	o, _ = observeCalls()
	if edited, _ := o.Of("kb").Container(compose.GateService); edited.ConfigHash == hashes[compose.GateService] {
		t.Errorf("a gate edited by hand reads back its config hash %q unchanged", edited.ConfigHash)
	}

	agent, _ := r.Container(compose.AgentService)
	run := func(cmd string) (int, string) {
		var out bytes.Buffer
		code, err := e.Exec(ctx, agent.ID, engine.ExecOptions{Cmd: []string{"sh", "-c", cmd}, Stdout: &out, Stderr: &out})
		if err != nil {
			t.Fatal(err)
		}
		return code, out.String()
	}
	// The two streams come side by side, in no set order.
	if code, out := run("echo to-stdout; echo to-stderr >&2"); code != 0 || len(out) != len("to-stdout\nto-stderr\n") || !strings.Contains(out, "to-stdout\n") || !strings.Contains(out, "to-stderr\n") {
		t.Errorf("exec printed %q (exit %d)", out, code)
	}
	if code, out := run("echo kept > /data/marker && exit 3"); code != 3 {
		t.Fatalf("exec exit %d, want 3: %s", code, out)
	}

	// Stopped: suspended, no pods, the claims kept.
	if err := e.Stop(ctx, p.Name); err != nil {
		t.Fatal(err)
	}
	o, _ = observeCalls()
	for _, c := range o.Of("kb").Containers {
		if c.State != engine.Exited {
			t.Errorf("stopped %s is %s", c.Service, c.State)
		}
	}
	if err := e.Start(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitInit(ctx, "kb"); err != nil {
		t.Fatal(err)
	}
	// The gate alone made anew: the agent's pod is the same.
	before, _ := e.pod(ctx, agent.ID)
	if err := e.Replace(ctx, p, []string{compose.GateService}); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitInit(ctx, "kb"); err != nil {
		t.Fatal(err)
	}
	after, _ := e.pod(ctx, agent.ID)
	if before == nil || after == nil || before.UID != after.UID {
		t.Errorf("replacing the gate remade the agent's pod")
	}
	if code, out := run("cat /data/marker"); code != 0 || strings.TrimSpace(out) != "kept" {
		t.Errorf("/data after stop, start and a new gate: %d %q", code, out)
	}

	// A second and third box: the same calls to observe them all.
	for _, name := range []string{"kb2", "kb3"} {
		q := boxProject(t, name, image, "tok-"+name)
		if err := e.Create(ctx, q, false); err != nil {
			t.Fatal(err)
		}
	}
	if _, three := observeCalls(); three != one {
		t.Errorf("Observe took %d calls with 3 boxes, %d with 1", three, one)
	}

	// Removed: containers, networks, then volumes, as rm does.
	o, _ = observeCalls()
	for _, name := range []string{"kb", "kb2", "kb3"} {
		r := o.Of(name)
		for _, c := range r.Containers {
			if err := e.RemoveContainer(ctx, c.ID); err != nil {
				t.Fatal(err)
			}
		}
		for _, n := range r.Networks {
			if err := e.RemoveNetwork(ctx, n.ID); err != nil {
				t.Fatal(err)
			}
		}
		for _, v := range r.Volumes {
			if err := e.RemoveVolume(ctx, v.Name); err != nil {
				t.Fatal(err)
			}
		}
	}
	left, err := kubectl(t, kubeconfig, "-n", ns, "get", "sandboxes,pods,pvc,svc,secrets,networkpolicies,configmaps", "-l", compose.ManagedLabel+"=1", "-o", "name")
	if err != nil || strings.TrimSpace(left) != "" {
		t.Errorf("left after removing every box: %v %s", err, left)
	}
}

// TestIntegrationKubeDoor: the NetworkPolicies a box is made with are
// enforced by the cluster's network: its agent reaches its own gate (its
// proxy and its routes) and executor, and neither the API server on the node, nor the node's
// kubelet, nor another box's executor. Real cluster: only the cluster's
// enforcer (kube-router here) decides what passes.
func TestIntegrationKubeDoor(t *testing.T) {
	kubeconfig, ctxName := testCluster(t)
	t.Parallel() // a namespace of its own
	const ns = "it-kube-door"
	namespace(t, kubeconfig, ns)
	e, _ := countingEngine(t, kubeconfig, ctxName, ns)
	ctx := context.Background()
	image := testBoxImage(t)
	for _, name := range []string{"da", "db"} {
		p := boxProject(t, name, image, "tok-"+name)
		if err := e.Create(ctx, p, false); err != nil {
			t.Fatal(err)
		}
		if err := e.Start(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	ip := map[string]string{}
	for _, name := range []string{"da", "db"} {
		if err := e.WaitInit(ctx, name); err != nil {
			t.Fatal(err)
		}
		for _, svc := range compose.Services {
			p, err := e.ready(ctx, name, svc, svc)
			if err != nil {
				t.Fatal(err)
			}
			ip[name+"/"+svc] = p.Status.PodIP
			ip["node"] = p.Status.HostIP
		}
	}
	agent := objectName(compose.ContainerName("da", compose.AgentService))
	// reach is curl's HTTP code for url from da's agent, straight to it
	// (not through the gate, its proxy): 000 when nothing answered.
	reach := func(url string) string {
		var out bytes.Buffer
		_, err := e.Exec(ctx, agent, engine.ExecOptions{Cmd: []string{"curl", "--noproxy", "*", "-s", "-k", "-o", "/dev/null", "-m", "2", "-w", "%{http_code}", url}, Stdout: &out})
		if err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	for what, url := range map[string]string{
		"its gate":          "http://" + ip["da/gate"] + ":3128/",
		"its gate's routes": "http://" + ip["da/gate"] + ":3129/_health",
		"its executor":      fmt.Sprintf("http://%s:%d/mcp", ip["da/executor"], compose.ExecutorPort),
		// By name, as the box's own programs reach them: the names are
		// the Services' addresses, which the cluster routes to the pods.
		"its gate's routes, by name": "http://" + compose.GateService + ":3129/_health",
		"its executor, by name":      fmt.Sprintf("http://%s:%d/mcp", compose.ExecutorService, compose.ExecutorPort),
	} {
		// The enforcer learns of new pods within moments.
		code := reach(url)
		for end := time.Now().Add(15 * time.Second); code == "000" && time.Now().Before(end); code = reach(url) {
			time.Sleep(500 * time.Millisecond)
		}
		if code == "000" {
			t.Errorf("the agent does not reach %s (%s)", what, url)
		}
	}
	for what, url := range map[string]string{
		"the API server":              "https://" + ip["node"] + ":6443/",
		"the kubelet":                 "https://" + ip["node"] + ":10250/",
		"another box's executor":      fmt.Sprintf("http://%s:%d/mcp", ip["db/executor"], compose.ExecutorPort),
		"another box's gate":          "http://" + ip["db/gate"] + ":3128/",
		"another box's gate's routes": "http://" + ip["db/gate"] + ":3129/_health",
		"its executor, other port":    "http://" + ip["da/executor"] + ":22/",
	} {
		if code := reach(url); code != "000" {
			t.Errorf("the agent reaches %s (%s): HTTP %s", what, url, code)
		}
	}
}
