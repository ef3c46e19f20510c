// Package testkube gives tests the test cluster: one node of Kubernetes that
// make test starts before the tests and stops after them
// (scripts/kube/up.sh and down.sh), with agent-sandbox's CRDs and controller
// and NetworkPolicies enforced. Tests reach it through its kubeconfig and,
// for now, kubectl; a test that finds no cluster is skipped, saying why.
package testkube

import (
	"os"
	"os/exec"
	"testing"
)

const (
	// EnvKubeconfig names the running test cluster's admin kubeconfig.
	EnvKubeconfig = "BOXES_TEST_KUBECONFIG"
	// EnvKubectl names the kubectl to use with it (else kubectl on PATH).
	EnvKubectl = "BOXES_TEST_KUBECTL"
)

// Config returns the kubeconfig of the running test cluster, or skips t
// when there is none: not root, or BOXES_TEST_KUBECONFIG not set. A
// kubeconfig that is named but missing fails t: the cluster was meant to
// be there.
func Config(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("no test cluster: not root (its kubelet, network and mounts need root; make test starts one as root)")
		return ""
	}
	path := os.Getenv(EnvKubeconfig)
	if path == "" {
		t.Skip("no test cluster: " + EnvKubeconfig + " is not set; make test starts one (scripts/kube/up.sh)")
		return ""
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("test cluster: %s names a kubeconfig that is not there (is the cluster down?): %v", EnvKubeconfig, err)
		return ""
	}
	return path
}

// Kubectl returns the kubectl to run against the test cluster: the one
// BOXES_TEST_KUBECTL names, else kubectl on PATH; t fails without one.
func Kubectl(t testing.TB) string {
	t.Helper()
	if path := os.Getenv(EnvKubectl); path != "" {
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("test cluster: %s: %v", EnvKubectl, err)
		}
		return path
	}
	path, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("test cluster: no kubectl (%s not set, none on PATH)", EnvKubectl)
	}
	return path
}
