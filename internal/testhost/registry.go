package testhost

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Registry is a private registry for a test: Debian's docker-registry (the
// distribution project's v2 server) with htpasswd users, storing in a
// directory of the test's, stopped by PID when the test ends.
type Registry struct {
	// Addr is HOST:PORT, as image references name the registry.
	Addr string
	// CA is the PEM of the CA that signed its certificate; nil when it
	// serves plain HTTP.
	CA []byte

	dir, storage, htpasswd, config string
	cmd                            *exec.Cmd
}

// StartRegistry starts a registry on 127.0.0.1 over plain HTTP (an engine
// treats 127.0.0.0/8 registries as insecure) that lets in user with
// password only. It skips the test where the machine cannot run one.
func StartRegistry(t testing.TB, user, password string) *Registry {
	t.Helper()
	for _, tool := range []string{"docker-registry", "htpasswd"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("a test registry needs %s (see .ci/run)", tool)
		}
	}
	dir := t.TempDir()
	out, err := exec.Command("htpasswd", "-Bbn", user, password).Output()
	if err != nil {
		t.Fatalf("htpasswd: %v", err)
	}
	r := &Registry{dir: dir, storage: filepath.Join(dir, "storage"), htpasswd: filepath.Join(dir, "htpasswd")}
	if err := os.WriteFile(r.htpasswd, out, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.listen(t, "127.0.0.1", ""); err != nil {
		t.Fatalf("test registry: %v", err)
	}
	return r
}

// ListenTLS starts a second server of r's storage and users on ip, over
// TLS with a certificate for ip from a CA made for it (Registry.CA): the
// same registry under another name, for engines that reach this machine
// at ip.
func (r *Registry) ListenTLS(t testing.TB, ip string) *Registry {
	t.Helper()
	other := &Registry{dir: filepath.Join(r.dir, ip), storage: r.storage, htpasswd: r.htpasswd}
	server, _, err := WriteTLS(other.dir, ip)
	if err != nil {
		t.Fatal(err)
	}
	if other.CA, err = os.ReadFile(filepath.Join(server, "ca.pem")); err != nil {
		t.Fatal(err)
	}
	if err := other.listen(t, ip, server); err != nil {
		t.Fatalf("test registry on %s: %v", ip, err)
	}
	return other
}

// listen writes the server's configuration for a free port on ip (TLS
// from tlsDir's cert.pem and key.pem unless it is empty), starts it and
// registers its stop with t.Cleanup.
func (r *Registry) listen(t testing.TB, ip, tlsDir string) error {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return err
	}
	r.Addr = net.JoinHostPort(ip, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	l.Close()
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		return err
	}
	var tlsBlock string
	if tlsDir != "" {
		tlsBlock = fmt.Sprintf("  tls:\n    certificate: %q\n    key: %q\n", filepath.Join(tlsDir, "cert.pem"), filepath.Join(tlsDir, "key.pem"))
	}
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: %q
http:
  addr: %q
%sauth:
  htpasswd:
    realm: boxes-test
    path: %q
`, r.storage, r.Addr, tlsBlock, r.htpasswd)
	r.config = filepath.Join(r.dir, "config.yml")
	if err := os.WriteFile(r.config, []byte(cfg), 0o600); err != nil {
		return err
	}
	t.Cleanup(func() {
		r.Stop()
		if t.Failed() {
			t.Logf("test registry %s: last log lines:\n%s", r.Addr, tail(filepath.Join(r.dir, "registry.log")))
		}
	})
	return r.Start()
}

// Start runs the server (again, after Stop: same address, same storage)
// and waits until it answers, asking for credentials.
func (r *Registry) Start() error {
	logFile, err := os.OpenFile(filepath.Join(r.dir, "registry.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command("docker-registry", "serve", r.config)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return err
	}
	r.cmd = cmd
	go func() { _ = cmd.Wait() }()
	scheme, client := "http", &http.Client{Timeout: 2 * time.Second}
	if r.CA != nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(r.CA)
		scheme = "https"
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := client.Get(scheme + "://" + r.Addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				return nil
			}
			err = fmt.Errorf("GET /v2/ without credentials: %s, want 401", resp.Status)
		}
		if time.Now().After(deadline) || !alive(cmd.Process.Pid) {
			r.Stop()
			return fmt.Errorf("docker-registry on %s did not answer: %w\n%s", r.Addr, err, tail(filepath.Join(r.dir, "registry.log")))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop stops the server by its PID; the storage stays, for Start.
func (r *Registry) Stop() {
	if r.cmd != nil {
		terminate(r.cmd.Process.Pid, 10*time.Second)
		r.cmd = nil
	}
}
