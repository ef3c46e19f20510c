package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/testkube"
	"github.com/hermes-box/boxes/kube"
	"github.com/hermes-box/boxes/spec"
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

// TestIntegrationKubeSnapshotCommands: boxes snapshot, snapshots, revert
// and snapshot rm from the command line on a box of a kubernetes: host:
// the snapshot made by a helper pod while the box runs (quiesced and
// resumed), listed with its size, a second one of the same label refused
// with nothing changed, the stopped box reverted to it, and the snapshot
// deleted. The box is made through the cluster's engine (a cluster pulls
// a box's image from a registry, which the test cluster has not).
// Real cluster: the helper pods and the claims are the cluster's.
func TestIntegrationKubeSnapshotCommands(t *testing.T) {
	image, _ := startIntegration(t)
	kubeconfig := testkube.Config(t)
	raw, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	const ns, box = "it-kube-cli-snap", "it-kss"
	kubectl := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(testkube.Kubectl(t), append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	dropNS := func() {
		_ = exec.Command(testkube.Kubectl(t), "--kubeconfig", kubeconfig, "delete", "namespace", ns, "--ignore-not-found", "--wait=true", "--timeout=120s").Run()
	}
	dropNS()
	kubectl("create", "namespace", ns)
	t.Cleanup(dropNS)

	dir := t.TempDir()
	config := filepath.Join(dir, "boxes.yaml")
	yaml := "version: 1\nfleet: it-kube\nhosts:\n  k8s: {kubernetes: {context: " + raw.CurrentContext + ", namespace: " + ns + ", kubeconfig: " + kubeconfig + "}}\nboxes:\n  " + box + ": {host: k8s}\n"
	writeFile(t, config, yaml)
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
