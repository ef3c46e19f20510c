// Package testkube gives tests the test cluster: one node of Kubernetes that
// make test starts before the tests and stops after them
// (scripts/kube/up.sh and down.sh), with agent-sandbox's CRDs and controller
// and NetworkPolicies enforced. Tests reach it through its kubeconfig and,
// for now, kubectl; a test that finds no cluster is skipped, saying why.
package testkube

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// TrustRegistry has the test cluster's node trust the registry at addr
// (HOST:PORT) over TLS with the CA caPEM, as containerd reads a registry's
// hosts.toml under the node's certs.d (scripts/kube/up.sh), and removes
// that trust when t ends. It skips t on a cluster started without certs.d.
func TrustRegistry(t testing.TB, addr string, caPEM []byte) {
	t.Helper()
	certs := filepath.Join(filepath.Dir(Config(t)), "certs.d")
	if _, err := os.Stat(certs); err != nil {
		t.Skipf("test cluster: its node has no certs.d for registries (%v): started by an earlier scripts/kube/up.sh", err)
	}
	dir := filepath.Join(certs, addr)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	hosts := fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = %q\n", "https://"+addr, "https://"+addr, ca)
	if err := os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(hosts), 0o644); err != nil {
		t.Fatal(err)
	}
}
