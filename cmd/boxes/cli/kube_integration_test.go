package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/hermes-box/boxes/internal/testkube"
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
