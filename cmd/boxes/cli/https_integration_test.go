package cli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/internal/testhost"
)

// TestIntegrationCredentialHTTPS proves a credential on ordinary HTTPS on
// the real engine, against HTTPS servers of the made-up internet whose
// certificates come from a CA of the test's own (the credential's ca:).
// From inside the agent, curl, git and a Go program reach the credential's
// destination over HTTPS through the gate, which adds the header in place
// of the agent's; a destination with no credential is a tunnel, the
// agent seeing its server's own certificate; the gate's authority's key is
// nowhere the agent can read, and no port of the gate gives it. A gate
// remade alone has a new authority, which the agent trusts once apply
// returns.
func TestIntegrationCredentialHTTPS(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image := testImage(t, "BOXES_TEST_IMAGE", "hermes-box-lite:test")
	const box = "it-https"
	removeBoxes(box)
	t.Cleanup(func() { removeBoxes(box) })
	in := testhost.StartInternet(t, map[string]string{"secure.test": testhost.WebA, "plain.test": testhost.WebB})
	ca := newTestCA(t)
	secure := serveTLS(t, in.NS, testhost.WebA+":443", ca, "secure.test")
	plain := serveTLS(t, in.NS, testhost.WebB+":443", ca, "plain.test")
	client := goClient(t)

	secret := randomSecret(t)
	t.Setenv("BOXES_IT_HTTPS_KEY", secret)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ca.pem"), ca.pem)
	yaml := func(egress string) string {
		return fmt.Sprintf(`version: 1
fleet: it-https
boxes:
  %s:
    egress: %s
    dns: [%s]
    credentials:
      secure: {to: secure.test, header: authorization, prefix: "Bearer ", from: "env:BOXES_IT_HTTPS_KEY", ca: "file:ca.pem"}
`, box, egress, testhost.DNSServer)
	}
	writeFile(t, filepath.Join(dir, "boxes.yaml"), yaml("[plain.test]"))
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	agent := compose.ContainerName(box, compose.AgentService)
	gateName := compose.ContainerName(box, compose.GateService)
	dockerCp(t, client, agent+":/usr/local/bin/https-get")
	writeFile(t, filepath.Join(dir, "test-ca.pem"), ca.pem)
	dockerCp(t, filepath.Join(dir, "test-ca.pem"), agent+":/tmp/test-ca.pem")
	inAgent := func(args ...string) (string, error) {
		out, err := exec.Command("docker", append([]string{"exec", "-u", "agent", "-e", "GIT_TERMINAL_PROMPT=0", agent}, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	// carried checks that the last request secure.test saw (by the tool
	// named) carried the credential alone.
	carried := func(tool string) {
		t.Helper()
		got := secure.last(tool)
		if v := got.Values("Authorization"); len(v) != 1 || v[0] != "Bearer "+secret {
			t.Errorf("%s: secure.test got Authorization %q, want the credential's alone", tool, v)
		}
	}

	t.Run("curl", func(t *testing.T) {
		out, err := inAgent("curl", "-sS", "-m", "10", "-H", "Authorization: Bearer the-agents-own", "https://secure.test/curl")
		if err != nil || out != "hello from secure.test" {
			t.Fatalf("curl https://secure.test/: %v %q", err, out)
		}
		carried("curl")
		// The gate answers for secure.test with its authority's
		// certificate, which the test's CA does not verify.
		if out, err := inAgent("curl", "-sS", "-m", "10", "--cacert", "/tmp/test-ca.pem", "https://secure.test/curl"); err == nil {
			t.Errorf("curl trusting the test's CA alone reached secure.test: %q", out)
		}
	})

	t.Run("git", func(t *testing.T) {
		out, err := inAgent("git", "ls-remote", "https://secure.test/repo.git")
		if err != nil || !strings.Contains(out, gitHead+"\trefs/heads/main") {
			t.Fatalf("git ls-remote https://secure.test/repo.git: %v %q", err, out)
		}
		carried("git")
	})

	t.Run("go", func(t *testing.T) {
		out, err := inAgent("https-get", "https://secure.test/go")
		if err != nil || !strings.HasPrefix(out, "200 HTTP/2.0 ") || !strings.Contains(out, "boxes gate authority") || !strings.HasSuffix(out, "hello from secure.test") {
			t.Fatalf("a Go program: %v %q, want 200 over HTTP/2 under the gate's authority", err, out)
		}
		carried("go")
	})

	t.Run("no credential, a tunnel", func(t *testing.T) {
		// Only a certificate of the test's CA passes with it alone: the
		// agent sees plain.test's own.
		out, err := inAgent("curl", "-sS", "-m", "10", "--cacert", "/tmp/test-ca.pem", "-H", "Authorization: Bearer the-agents-own", "https://plain.test/curl")
		if err != nil || out != "hello from plain.test" {
			t.Fatalf("curl https://plain.test/ trusting the test's CA: %v %q", err, out)
		}
		if v := plain.last("curl").Get("Authorization"); v != "Bearer the-agents-own" {
			t.Errorf("plain.test got Authorization %q, want the agent's own", v)
		}
		out, err = inAgent("env", "SSL_CERT_FILE=/tmp/test-ca.pem", "https-get", "https://plain.test/go")
		if err != nil || !strings.Contains(out, "it https test CA") {
			t.Errorf("a Go program to plain.test: %v %q, want the server's certificate, of the test's CA", err, out)
		}
		if out, err := inAgent("curl", "-sS", "-m", "10", "https://plain.test/curl"); err == nil {
			t.Errorf("curl reached plain.test with the box's bundle, which does not hold the test's CA: %q", out)
		}
	})

	authority := gateAuthority(t, inAgent)
	t.Run("the authority's key", func(t *testing.T) {
		// Not served: the route port gives the certificate alone, and
		// nothing else either port answers holds a key.
		for _, u := range []string{"http://gate:3129/_ca.pem", "http://gate:3129/_ca.key", "http://gate:3129/_key.pem", "http://gate:3128/_ca.pem", "http://gate:3129/secure/_ca.key"} {
			out, _ := inAgent("curl", "-s", "-m", "5", "--noproxy", "*", u)
			if strings.Contains(out, "PRIVATE KEY") {
				t.Errorf("%s gives a private key", u)
			}
		}
		// Not on disk: the gate's root is read-only with nothing mounted,
		// and nothing the agent's container wrote holds the key.
		// (Docker's own init, for init: true, is the one file put there.)
		for _, line := range strings.Split(dockerOut(t, "diff", gateName), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == "A" && f[1] != "/usr/sbin/docker-init" {
				t.Errorf("the gate's container has a file of its own: %s", f[1])
			}
		}
		if mounts := dockerOut(t, "inspect", "-f", "{{len .Mounts}} {{json .HostConfig.Tmpfs}} {{.HostConfig.ReadonlyRootfs}}", gateName); mounts != "0 null true" {
			t.Errorf("the gate's mounts: %s", mounts)
		}
		var written []string
		for _, line := range strings.Split(dockerOut(t, "diff", agent), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] != "D" {
				written = append(written, f[1])
			}
		}
		written = append(written, "/data", "/run", "/tmp", "/dev/shm")
		found, _ := exec.Command("docker", append([]string{"exec", agent, "grep", "-rlsI", "PRIVATE KEY", "--"}, written...)...).Output()
		for _, path := range strings.Fields(string(found)) {
			data, _ := exec.Command("docker", "exec", agent, "cat", path).Output()
			if holdsKeyOf(data, authority) {
				t.Errorf("%s in the agent's container holds the gate's authority's key", path)
			}
		}
	})

	// A gate remade alone has a new authority; apply returns with the
	// agent trusting it.
	t.Run("a new gate", func(t *testing.T) {
		before := dockerOut(t, "inspect", "-f", "{{.Id}} {{.State.StartedAt}}", agent)
		writeFile(t, filepath.Join(dir, "boxes.yaml"), yaml("none"))
		if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 || !strings.Contains(r.stdout+r.stderr, "the agent keeps running") {
			t.Fatalf("apply egress none: %+v", r)
		}
		if after := dockerOut(t, "inspect", "-f", "{{.Id}} {{.State.StartedAt}}", agent); after != before {
			t.Errorf("the agent was remade or restarted for a gate-only change: %s, then %s", before, after)
		}
		if renewed := gateAuthority(t, inAgent); renewed.Equal(authority) {
			t.Error("the remade gate has the old gate's authority")
		}
		out, err := inAgent("curl", "-sS", "-m", "10", "https://secure.test/curl")
		if err != nil || out != "hello from secure.test" {
			t.Fatalf("curl https://secure.test/ right after the gate was remade: %v %q", err, out)
		}
		carried("curl")
		if out, err := inAgent("curl", "-sS", "-m", "10", "--cacert", "/tmp/test-ca.pem", "https://plain.test/curl"); err == nil {
			t.Errorf("plain.test reached under egress: none: %q", out)
		}
	})

	// A gate its engine restarts (a crash, docker restart) has a new
	// authority too: the agent's healthcheck trusts it at its next look.
	t.Run("a gate restarted", func(t *testing.T) {
		was := gateAuthority(t, inAgent)
		// As if the healthcheck had just looked: the next look is due in
		// 9 s, long after this test's.
		dockerOut(t, "exec", agent, "sh", "-c", "date +%s >/run/hb-trust.at")
		dockerOut(t, "restart", "-t", "1", gateName)
		var now *x509.Certificate
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if out, err := inAgent("curl", "-s", "-m", "2", "--noproxy", "*", "-o", "/dev/null", "-w", "%{http_code}", "http://gate:3129/_health"); err == nil && out == "200" {
				now = gateAuthority(t, inAgent)
				break
			}
		}
		if now == nil || now.Equal(was) {
			t.Fatalf("the restarted gate's authority: %v, want a new one", now)
		}
		if out, err := inAgent("curl", "-sS", "-m", "10", "https://secure.test/curl"); err == nil {
			t.Fatalf("curl trusted the restarted gate before the agent was told: %q", out)
		}
		// The healthcheck as Docker runs it, once its interval has passed
		// (the mark of its last look removed, the box ready a while).
		dockerOut(t, "exec", agent, "rm", "-f", "/run/hb-trust.at")
		dockerOut(t, "exec", agent, "touch", "-d", "-1 min", "/run/hb-ready")
		dockerOut(t, "exec", agent, "hb", "health", "agent")
		if out, err := inAgent("curl", "-sS", "-m", "10", "https://secure.test/curl"); err != nil || out != "hello from secure.test" {
			t.Fatalf("curl https://secure.test/ after the healthcheck: %v %q", err, out)
		}
		// One block of the gate's in the bundle, however often it changed.
		if n := dockerOut(t, "exec", agent, "grep", "-c", "^# hb trust: ", "/etc/ssl/certs/ca-certificates.crt"); n != "1" {
			t.Errorf("the bundle has %s blocks of the gate's", n)
		}
	})

	// A box with no credential left has a gate with no authority, and the
	// agent trusts none.
	t.Run("no credential", func(t *testing.T) {
		writeFile(t, filepath.Join(dir, "boxes.yaml"), fmt.Sprintf("version: 1\nfleet: it-https\nboxes:\n  %s:\n    egress: none\n    dns: [%s]\n", box, testhost.DNSServer))
		if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
			t.Fatalf("apply without the credential: %+v", r)
		}
		if out, _ := inAgent("curl", "-s", "-m", "5", "--noproxy", "*", "-o", "/dev/null", "-w", "%{http_code}", "http://gate:3129/_ca.pem"); out != "404" {
			t.Errorf("the gate's authority without a credential: HTTP %s, want 404", out)
		}
		if out, err := exec.Command("docker", "exec", agent, "grep", "-c", "^# hb trust: ", "/etc/ssl/certs/ca-certificates.crt").CombinedOutput(); strings.TrimSpace(string(out)) != "0" {
			t.Errorf("the bundle still has the gate's block: %s %v", out, err)
		}
	})
}

// gitHead is the commit the made-up git server says its main branch is at.
const gitHead = "0123456789abcdef0123456789abcdef01234567"

// tlsServer is an HTTPS server of the made-up internet with a certificate
// of the test's CA, keeping the headers of the last request of each tool
// (by the path's first segment: /curl, /go, /repo.git is git's).
type tlsServer struct {
	mu   sync.Mutex
	seen map[string]http.Header
}

func (s *tlsServer) last(tool string) http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[tool]
}

// serveTLS serves HTTPS for name on addr in namespace ns. It answers
// "hello from NAME", and to git, a smart-HTTP advertisement of one branch.
func serveTLS(t *testing.T, ns, addr string, ca *testCA, name string) *tlsServer {
	t.Helper()
	s := &tlsServer{seen: map[string]http.Header{}}
	l, err := testhost.ListenIn(ns, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		// A client that does not trust the certificate ends the handshake:
		// that is what the test makes some do.
		ErrorLog:  log.New(io.Discard, "", 0),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{ca.serverCert(t, name)}},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tool, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
			if tool == "repo.git" {
				tool = "git"
			}
			s.mu.Lock()
			s.seen[tool] = r.Header.Clone()
			s.mu.Unlock()
			if tool != "git" {
				fmt.Fprintf(w, "hello from %s", name)
				return
			}
			if r.URL.Path != "/repo.git/info/refs" || r.URL.Query().Get("service") != "git-upload-pack" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
			w.Header().Set("Cache-Control", "no-cache")
			_, _ = w.Write([]byte(pktLine("# service=git-upload-pack\n") + "0000" +
				pktLine(gitHead+" HEAD\x00symref=HEAD:refs/heads/main\n") + pktLine(gitHead+" refs/heads/main\n") + "0000"))
		}),
	}
	go func() { _ = srv.ServeTLS(l, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// pktLine is s as one line of git's pkt-line format.
func pktLine(s string) string { return fmt.Sprintf("%04x%s", len(s)+4, s) }

// testCA is the test's own certificate authority.
type testCA struct {
	key  *ecdsa.PrivateKey
	cert *x509.Certificate
	pem  string
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "it https test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{key: key, cert: cert, pem: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}
}

func (ca *testCA) serverCert(t *testing.T, name string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// httpsGet is the Go program the test runs in the agent: GET its argument
// through the environment's proxy and roots; it prints the status, the
// protocol, the issuer of the certificate it saw and the body.
const httpsGet = `package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
)

func main() {
	resp, err := http.Get(os.Args[1])
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Printf("%d %s %s: %s\n", resp.StatusCode, resp.Proto, resp.TLS.PeerCertificates[0].Issuer.CommonName, body)
}
`

// goClient builds httpsGet, static, and returns its path.
func goClient(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(httpsGet), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module httpsget\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "https-get")
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the Go client: %v\n%s", err, b)
	}
	return out
}

func dockerCp(t *testing.T, from, to string) {
	t.Helper()
	if out, err := exec.Command("docker", "cp", from, to).CombinedOutput(); err != nil {
		t.Fatalf("docker cp %s %s: %v\n%s", from, to, err, out)
	}
}

// gateAuthority is the certificate the box's gate serves for the agent to
// trust, fetched from inside the agent.
func gateAuthority(t *testing.T, inAgent func(...string) (string, error)) *x509.Certificate {
	t.Helper()
	out, err := inAgent("curl", "-sS", "-m", "5", "--noproxy", "*", "http://gate:3129/_ca.pem")
	block, _ := pem.Decode([]byte(out))
	if err != nil || block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("the gate's authority: %v %q", err, out)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// holdsKeyOf reports whether data holds a PEM private key whose public
// half is cert's.
func holdsKeyOf(data []byte, cert *x509.Certificate) bool {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return false
		}
		var key any
		var err error
		switch block.Type {
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		default:
			continue
		}
		if ec, ok := key.(*ecdsa.PrivateKey); err == nil && ok {
			if pub, ok := cert.PublicKey.(*ecdsa.PublicKey); ok && pub.Equal(&ec.PublicKey) {
				return true
			}
		}
	}
}
