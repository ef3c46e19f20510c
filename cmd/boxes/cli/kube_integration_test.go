package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/testhost"
	"github.com/hermes-box/boxes/internal/testkube"
	"github.com/hermes-box/boxes/kube"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/statedir"
	"github.com/hermes-box/boxes/workspace"
)

// TestIntegrationKubePlan: boxes plan on a kubernetes: host of the test
// cluster, from the command line: a namespace that does not exist is
// refused naming the host, an image boxes.lock has no registry reference
// of is refused for the cluster, and with one the plan makes the box and
// has the cluster pull it. Real cluster: the API server answers the
// checks and the observation.
func TestIntegrationKubePlan(t *testing.T) {
	image, _ := startIntegration(t)
	kubeconfig := testkube.Config(t)
	raw, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	yaml := func(ns string) string {
		return "version: 1\nhosts:\n  k8s: {kubernetes: {context: " + raw.CurrentContext + ", namespace: " + ns + ", kubeconfig: " + kubeconfig + "}}\nboxes:\n  it-kp: {host: k8s}\n"
	}
	writeFile(t, filepath.Join(dir, "boxes.yaml"), yaml("it-no-such-namespace"))
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	r := boxes(t, dir, "plan")
	if r.code != 1 || !strings.Contains(r.stderr, "host k8s") || !strings.Contains(r.stderr, "namespace it-no-such-namespace does not exist") || !strings.Contains(r.stderr, "create namespace it-no-such-namespace") {
		t.Fatalf("plan with a missing namespace: %+v", r)
	}

	writeFile(t, filepath.Join(dir, "boxes.yaml"), yaml("default"))
	r = boxes(t, dir, "plan")
	if r.code != 1 || !strings.Contains(r.stderr, "host k8s is a Kubernetes cluster, whose nodes pull images from a registry") || !strings.Contains(r.stderr, "boxes build --push") {
		t.Fatalf("plan of an image without a registry reference: %+v", r)
	}

	// The lock as boxes build --push writes it: the image's reference by digest.
	lock := filepath.Join(dir, "boxes.lock")
	data, err := os.ReadFile(lock)
	if err != nil {
		t.Fatal(err)
	}
	ref := "registry.example/hermes-box-lite@sha256:" + strings.Repeat("ab", 32)
	edited := regexp.MustCompile(`(?m)^(\s+ref:) .*$`).ReplaceAllString(string(data), "${1} "+ref)
	if edited == string(data) {
		t.Fatalf("no ref: line in the lock:\n%s", data)
	}
	if err := os.WriteFile(lock, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	r = boxes(t, dir, "plan")
	if r.code != 0 || !strings.Contains(r.stdout, `+ box "it-kp"`) || !strings.Contains(r.stdout, "pulled by the nodes of host k8s from "+ref) {
		t.Fatalf("plan: %+v", r)
	}
	t.Logf("plan:\n%s", r.stdout)
}

// TestIntegrationKubeSnapshotCommands: boxes ls and open, then snapshot,
// snapshots, revert and snapshot rm from the command line on a box of a
// kubernetes: host: the dashboard opened, signed in, through the API
// server's port-forward;
// the snapshot made by a helper pod while the box runs (quiesced and
// resumed), listed with its size, a second one of the same label refused
// with nothing changed, the stopped box reverted to it, and the snapshot
// deleted. The box is made through the cluster's engine, of the image
// imported into the test node (TestIntegrationKubeApplyFromRegistry makes
// one by apply, from a registry).
// Real cluster: the helper pods and the claims are the cluster's.
func TestIntegrationKubeSnapshotCommands(t *testing.T) {
	step := trail(t)
	image, _ := startIntegration(t)
	const ns, box = "it-kube-cli-snap", "it-kss"
	k := startKubeNamespace(t, ns)
	kubectl, dropNS := k.kubectl, k.dropNS

	dir := t.TempDir()
	config := filepath.Join(dir, "boxes.yaml")
	k.write(t, dir, box)
	// As the command line reads it (writeFile names the fleet for make
	// test's part).
	cfg, err := spec.Parse(config, []byte(readFile(t, config)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := cfg.Box(box)
	ctx := context.Background()
	e, err := kube.Connect(ctx, cfg.Hosts["k8s"])
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	p, err := compose.Project(compose.Input{Box: b, Image: image, Token: "tok-kss", WorkDir: dir, ConfigFile: config})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Create(ctx, p, false); err != nil {
		t.Fatal(err)
	}
	start := func() string {
		t.Helper()
		if err := e.Start(ctx, p); err != nil {
			t.Fatal(err)
		}
		if err := e.WaitInit(ctx, box); err != nil {
			t.Fatal(err)
		}
		id, err := e.ContainerID(ctx, box, compose.AgentService)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	agent := start()
	run := func(cmd string) string {
		t.Helper()
		var out strings.Builder
		if code, err := e.Exec(ctx, agent, engine.ExecOptions{Cmd: []string{"sh", "-c", cmd}, Stdout: &out, Stderr: &out}); err != nil || code != 0 {
			t.Fatalf("%s: exit %d, %v: %s", cmd, code, err, out.String())
		}
		return strings.TrimSpace(out.String())
	}
	run("echo before > /data/marker && head -c 200000 /dev/urandom > /data/blob")

	// ls says how the executor is reached, and open reaches its dashboard,
	// signed in, through the API server's port-forward.
	if err := statedir.Beside(config).Tokens().Put(box, "tok-kss"); err != nil {
		t.Fatal(err)
	}
	if r := boxes(t, dir, "ls"); r.code != 0 || !strings.Contains(r.stdout, "via the API server: boxes open "+box) {
		t.Errorf("ls: %+v", r)
	}
	var listed []struct {
		Reach string `json:"executor_reach"`
		URL   string `json:"executor_url"`
	}
	if r := boxes(t, dir, "ls", "--json"); json.Unmarshal([]byte(r.stdout), &listed) != nil || len(listed) != 1 || listed[0].Reach != "api-forward" || listed[0].URL != "" {
		t.Errorf("ls --json: %+v", r)
	}
	openThroughForward(t, step, dir, box, "forwarded through the API server of host k8s")

	r := boxes(t, dir, "snapshot", box, "before")
	if r.code != 0 || !strings.Contains(r.stdout, "before") {
		t.Fatalf("snapshot: %+v", r)
	}
	t.Logf("boxes snapshot %s before:\n%s%s", box, r.stdout, r.stderr)
	if got := run("test -e /data/.hb/quiesced && echo quiesced || echo resumed"); got != "resumed" {
		t.Errorf("the box after its snapshot: %s", got)
	}
	r = boxes(t, dir, "snapshots", box, "--json")
	var rows workspace.SnapshotRows
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 1 || rows[0].Label != "before" || rows[0].Host != "k8s" || rows[0].SizeBytes < 200000 || rows[0].Incomplete {
		t.Fatalf("snapshots: %v %+v", err, r)
	}
	claims := func() string { return kubectl("-n", ns, "get", "pvc", "-o", "name") }
	had := claims()
	if r := boxes(t, dir, "snapshot", box, "before"); r.code == 0 || !strings.Contains(r.stderr, "before") {
		t.Errorf("a second snapshot labelled before: %+v", r)
	} else {
		t.Logf("a second boxes snapshot %s before: exit %d\n%s", box, r.code, r.stderr)
	}
	t.Logf("boxes snapshots %s:\n%s", box, boxes(t, dir, "snapshots", box).stdout)
	if now := claims(); now != had {
		t.Errorf("a refused snapshot changed the claims: %q, was %q", now, had)
	}

	run("echo after > /data/marker")
	if r := boxes(t, dir, "stop", box); r.code != 0 {
		t.Fatalf("stop: %+v", r)
	}
	r = boxes(t, dir, "revert", box, "before", "--confirm", box)
	if r.code != 0 || !strings.Contains(r.stdout, "reverted "+box+" to snapshot before") {
		t.Fatalf("revert: %+v", r)
	}
	t.Logf("boxes revert %s before:\n%s%s", box, r.stdout, r.stderr)
	agent = start()
	if got := run("cat /data/marker; wc -c < /data/blob"); got != "before\n200000" {
		t.Errorf("/data after the revert: %q", got)
	}

	// Saved from the cluster: a verified archive, which extract reads and
	// load makes a box of on the local Docker engine (a move by hand).
	lowerScryptCost(t)
	t.Setenv(backup.EnvPassphrase, "correct horse battery staple")
	run("echo saved > /data/marker")
	file := filepath.Join(t.TempDir(), box+archive.Ext)
	r = boxes(t, dir, "save", box, "-o", file)
	if r.code != 0 || !strings.Contains(r.stdout, "verified") {
		t.Fatalf("save from the cluster: %+v", r)
	}
	t.Logf("boxes save %s:\n%s%s", box, r.stdout, r.stderr)
	if got := run("test -e /data/.hb/quiesced && echo quiesced || echo resumed"); got != "resumed" {
		t.Errorf("the box after its save: %s", got)
	}
	out := filepath.Join(t.TempDir(), "x")
	if r := boxes(t, dir, "extract", file, out); r.code != 0 || readFile(t, filepath.Join(out, "data", "marker")) != "saved\n" {
		t.Errorf("extract of the cluster's archive: %+v", r)
	}
	if r := boxes(t, dir, "snapshot", "rm", box, "before", "--confirm", box); r.code != 0 || !strings.Contains(r.stdout, "removed snapshot before of "+box) {
		t.Errorf("snapshot rm: %+v", r)
	}
	if out := claims(); strings.Contains(out, "snap-before") {
		t.Errorf("snapshot rm left its claim: %s", out)
	}
	// The cluster's part done, and gone, before Docker makes networks:
	// the cluster's network rewrites iptables as its pods go.
	dropNS()
	const here = "it-kss-here"
	removeBoxes(here)
	t.Cleanup(func() { removeBoxes(here) })
	// Loaded elsewhere: a boxes.yaml of the local engine alone.
	elsewhere := t.TempDir()
	writeFile(t, filepath.Join(elsewhere, "boxes.yaml"), "version: 1\nfleet: it-kube\nboxes:\n  "+here+": {}\n")
	if r := boxes(t, elsewhere, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	r = boxes(t, elsewhere, "load", file, here)
	if r.code != 0 || !strings.Contains(r.stdout, "loaded "+here) {
		t.Fatalf("load of the cluster's archive on Docker: %+v", r)
	}
	if r := boxes(t, elsewhere, "exec", "-u", "root", here, "--", "cat", "/data/marker"); r.stdout != "saved\n" {
		t.Errorf("the loaded box's /data/marker: %+v", r)
	}
}

// TestIntegrationKubeApplyFromRegistry: boxes apply onto a kubernetes:
// host from the command line, its image pushed by lock image --push to a
// private registry (htpasswd users, TLS with a CA made for the test that
// the node trusts): with a wrong password the box fails with the node's
// refusal, naming the registry, and the hint to log in here, the password
// printed nowhere; logged in, the next apply gives the nodes this
// machine's credentials as an image pull secret boxes makes and labels,
// the node pulls the locked digest and the box becomes ready, doctor
// reaches its executor through the API server and runs the door's probes
// inside it, and the plan after it is empty. Real cluster: the kubelet and containerd pull with
// the secret, and the registry checks it.
func TestIntegrationKubeApplyFromRegistry(t *testing.T) {
	image, _ := startIntegration(t)
	const box = "it-kreg"
	k := startKubeRegistry(t, image, "it-kube-cli-reg")
	kubectl, ns, reg, ref, login := k.kubectl, k.ns, k.reg, k.ref, k.login
	dir := t.TempDir()
	k.write(t, dir, box)
	const user, password = kubeRegistryUser, kubeRegistryPassword
	pullSecrets := func() string {
		return kubectl("-n", ns, "get", "secrets", "-l", kube.PullSecretLabel+"=1", "-o", `jsonpath={range .items[*]}{.type}{" "}{.metadata.annotations.boxes\.registry}{"\n"}{end}`)
	}

	// Everything the commands print, for the passwords' absence.
	var printed []string
	cmd := func(args ...string) run {
		t.Helper()
		r := boxes(t, dir, args...)
		printed = append(printed, r.stdout+r.stderr)
		return r
	}
	login("wrong-password")
	r := cmd("apply", "--auto-approve")
	t.Logf("apply with a wrong password: exit %d\n%s", r.code, r.stderr)
	if r.code != 1 || !strings.Contains(r.stderr, "the node cannot pull image "+ref+" from registry "+reg.Addr) ||
		!strings.Contains(r.stderr, "boxes: hint: docker login "+reg.Addr+" on this machine") {
		t.Fatalf("apply with a wrong password: %+v", r)
	}
	if s := pullSecrets(); s != "kubernetes.io/dockerconfigjson "+reg.Addr+"\n" {
		t.Errorf("pull secrets after the first apply: %q", s)
	}

	login(password)
	start := time.Now()
	r = cmd("apply", "--auto-approve")
	if r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	t.Logf("apply, logged in: %s\n%s%s", time.Since(start).Round(time.Millisecond), r.stdout, r.stderr)
	if e := cmd("exec", box, "--", "cat", "/etc/hostname"); e.code != 0 {
		t.Errorf("exec in the box: %+v", e)
	}
	digest := ref[strings.LastIndex(ref, "@")+1:]
	pulled := kubectl("-n", ns, "get", "pods", "-l", compose.BoxLabel+"="+box, "-o", `jsonpath={range .items[*]}{.status.containerStatuses[0].imageID}{"\n"}{end}`)
	if n := strings.Count(pulled, "@"+digest); n != len(compose.Services) {
		t.Errorf("the box's pods run %q, not %s each", pulled, digest)
	}
	// doctor reaches the executor through the API server, as open does,
	// and runs the door's probes from inside the agent.
	dr := cmd("doctor", box)
	t.Logf("doctor: exit %d\n%s%s", dr.code, dr.stdout, dr.stderr)
	for _, want := range []string{
		"ok    host  executor port              no port published; reached through a port the engine forwards to it",
		"ok    host  mcp with token             initialize at http://127.0.0.1:",
		"ok    host  mcp without token          refused with 401",
		"ok    box   no way around the gate",
	} {
		if !strings.Contains(dr.stdout, want) {
			t.Errorf("doctor does not say %q", want)
		}
	}
	// The test cluster routes Services (kube-proxy): the agent reaches its
	// gate and its executor by their Services' addresses, and every check
	// passes.
	if !strings.Contains(dr.stdout, "ok    box   gate answers") || dr.code != 0 {
		t.Errorf("doctor on the cluster: exit %d, or its gate does not answer", dr.code)
	}
	// A cluster that does not enforce the box's policy is reported from
	// inside: with the agent's policy removed by hand, a direct
	// connection reaches the node, and doctor says so; apply puts the
	// policy back.
	inside := strings.ReplaceAll(compose.InsideNetworkName(box), "_", "-") // as a cluster names it
	kubectl("-n", ns, "delete", "networkpolicy", inside)
	var open run
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		if open = cmd("doctor", box); strings.Contains(open.stdout, "FAIL  box   no way around the gate") {
			break
		}
	}
	if !strings.Contains(open.stdout, "FAIL  box   no way around the gate") || !strings.Contains(open.stdout, "a direct connection from the agent reached a machine") {
		t.Errorf("doctor with the agent's policy gone:\n%s", open.stdout)
	}
	if r := cmd("apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply after the policy was removed: %+v", r)
	}
	kubectl("-n", ns, "get", "networkpolicy", inside)
	if plan := cmd("plan", "--detailed-exitcode"); plan.code != 0 {
		t.Errorf("plan after the apply: %+v", plan)
	}
	for _, out := range printed {
		for _, pw := range []string{password, "wrong-password"} {
			if strings.Contains(out, pw) || strings.Contains(out, base64.StdEncoding.EncodeToString([]byte(user+":"+pw))) {
				t.Errorf("a password was printed:\n%s", out)
			}
		}
	}
}

const kubeRegistryUser, kubeRegistryPassword = "alice", "s3cret-for-the-cluster"

// kubeNamespace is a namespace of the test cluster of a test's own,
// removed (and waited for) before and after it, and what reaches it.
type kubeNamespace struct {
	kubeconfig, context, ns, kubectlPath string
	kubectl                              func(args ...string) string
	// lockFile, when set, is the boxes.lock write gives each directory.
	lockFile string
}

func startKubeNamespace(t *testing.T, ns string) *kubeNamespace {
	t.Helper()
	k := &kubeNamespace{kubeconfig: testkube.Config(t), kubectlPath: testkube.Kubectl(t), ns: ns}
	raw, err := clientcmd.LoadFromFile(k.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	k.context = raw.CurrentContext
	k.kubectl = func(args ...string) string {
		t.Helper()
		out, err := exec.Command(k.kubectlPath, append([]string{"--kubeconfig", k.kubeconfig}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	k.dropNS()
	k.kubectl("create", "namespace", ns)
	t.Cleanup(k.dropNS)
	return k
}

// kubeRegistry is a namespace of its own on the test cluster, and the test
// image pushed by lock image --push to a private registry (htpasswd users,
// TLS with a CA made for the test that only the node trusts), with this
// machine's docker configuration (the test's own) logged in to it.
type kubeRegistry struct {
	*kubeNamespace
	// reg is the registry as the node reaches it; ref the image there by
	// digest, as boxes.lock records it.
	reg     *testhost.Registry
	ref, id string
	// login writes the docker configuration with password for the
	// registry under both its names.
	login func(password string)
}

func startKubeRegistry(t *testing.T, image, ns string) *kubeRegistry {
	t.Helper()
	k := &kubeRegistry{kubeNamespace: startKubeNamespace(t, ns)}
	pushTo := testhost.StartRegistry(t, kubeRegistryUser, kubeRegistryPassword)
	k.reg = pushTo.ListenTLS(t, "127.0.0.1")
	testkube.TrustRegistry(t, k.reg.Addr, k.reg.CA)

	config := t.TempDir()
	t.Setenv("DOCKER_CONFIG", config)
	k.login = func(password string) {
		t.Helper()
		auth := base64.StdEncoding.EncodeToString([]byte(kubeRegistryUser + ":" + password))
		data := fmt.Sprintf(`{"auths": {%q: {"auth": %q}, %q: {"auth": %q}}}`, pushTo.Addr, auth, k.reg.Addr, auth)
		if err := os.WriteFile(filepath.Join(config, "config.json"), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	k.login(kubeRegistryPassword)
	dir := t.TempDir()
	k.write(t, dir)
	repo := pushTo.Addr + "/hbl"
	untag(t, repo+":test")
	if r := boxes(t, dir, "lock", "image", image, "--push", repo); r.code != 0 {
		t.Fatalf("lock image --push: %+v", r)
	}
	k.lockFile = filepath.Join(t.TempDir(), "boxes.lock")
	lock, err := spec.LoadLock(filepath.Join(dir, "boxes.lock"))
	if err != nil {
		t.Fatal(err)
	}
	untag(t, lock.Image.Ref)
	// The node reaches the registry by its TLS name; a digest is the
	// same under every name of one registry.
	k.ref = k.reg.Addr + "/hbl@" + lock.Image.Ref[strings.LastIndex(lock.Image.Ref, "@")+1:]
	k.id = lock.Image.ID
	lock.Image.Ref = k.ref
	if err := spec.WriteLock(k.lockFile, lock); err != nil {
		t.Fatal(err)
	}
	return k
}

// dropNS removes the namespace and waits for it to be gone.
func (k *kubeNamespace) dropNS() {
	_ = exec.Command(k.kubectlPath, "--kubeconfig", k.kubeconfig, "delete", "namespace", k.ns, "--ignore-not-found", "--wait=true", "--timeout=180s").Run()
}

// write writes dir's boxes.yaml, boxes on the cluster's host k8s, and
// lockFile, when set, as its boxes.lock.
func (k *kubeNamespace) write(t *testing.T, dir string, names ...string) {
	t.Helper()
	k.writeWith(t, dir, "", names...)
}

// writeWith is write with defaults, a YAML block of defaults: ("" none).
func (k *kubeNamespace) writeWith(t *testing.T, dir, defaults string, names ...string) {
	t.Helper()
	y := "version: 1\nfleet: it-kube\nhosts:\n  k8s: {kubernetes: {context: " + k.context + ", namespace: " + k.ns + ", kubeconfig: " + k.kubeconfig + "}}\n" + defaults + "boxes:"
	if len(names) == 0 {
		y += " {}"
	}
	y += "\n"
	for _, n := range names {
		y += "  " + n + ": {host: k8s}\n"
	}
	writeFile(t, filepath.Join(dir, "boxes.yaml"), y)
	if k.lockFile != "" {
		writeFile(t, filepath.Join(dir, "boxes.lock"), readFile(t, k.lockFile))
	}
}
