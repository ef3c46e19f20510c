package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/cli/cli/command"
	"github.com/docker/cli/cli/config"
	"github.com/docker/cli/cli/connhelper/commandconn"
	ctxtls "github.com/docker/cli/cli/context"
	dcontext "github.com/docker/cli/cli/context/docker"
	"github.com/docker/cli/cli/context/store"

	"github.com/hermes-box/boxes/internal/testhost"
	"github.com/hermes-box/boxes/spec"
)

// useConfigDir points the docker CLI configuration (and its context store)
// at a fresh directory for the test.
func useConfigDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	old := config.Dir()
	config.SetDir(dir)
	t.Cleanup(func() { config.SetDir(old) })
	t.Setenv("DOCKER_CONFIG", dir)
	return dir
}

func addContext(t *testing.T, name, host string, tls *ctxtls.TLSData) {
	t.Helper()
	s := store.New(config.ContextStoreDir(), command.DefaultContextStoreConfig())
	meta := store.Metadata{Name: name, Endpoints: map[string]any{dcontext.DockerEndpoint: dcontext.EndpointMeta{Host: host}}, Metadata: command.DockerContext{}}
	if err := s.CreateOrUpdate(meta); err != nil {
		t.Fatal(err)
	}
	if tls != nil {
		if err := s.ResetEndpointTLSMaterial(name, dcontext.DockerEndpoint, tls.ToStoreTLSData()); err != nil {
			t.Fatal(err)
		}
	}
}

func hostError(t *testing.T, err error) *HostError {
	t.Helper()
	var he *HostError
	if !errors.As(err, &he) {
		t.Fatalf("err = %v (%T), want a HostError", err, err)
	}
	return he
}

func TestResolveForms(t *testing.T) {
	useConfigDir(t)
	tlsDir := t.TempDir()
	if _, _, err := testhost.WriteTLS(tlsDir, "10.0.0.5"); err != nil {
		t.Fatal(err)
	}
	clientTLS := filepath.Join(tlsDir, "client-tls")
	addContext(t, "nexus", "ssh://me@nexus:2222/run/docker.sock", nil)
	addContext(t, "plain", "unix:///run/other.sock", nil)

	cases := []struct {
		host    spec.Host
		url     string
		context string
		ssh     bool
	}{
		{spec.Host{Name: "a", Docker: "ssh://me@nexus"}, "ssh://me@nexus", "", true},
		{spec.Host{Name: "b", Docker: "ssh://me@nexus/run/user/1000/docker.sock"}, "ssh://me@nexus/run/user/1000/docker.sock", "", true},
		{spec.Host{Name: "c", Docker: "tcp://10.0.0.5:2376", TLS: clientTLS}, "tcp://10.0.0.5:2376", "", false},
		{spec.Host{Name: "d", Docker: "unix:///run/other.sock"}, "unix:///run/other.sock", "", false},
		{spec.Host{Name: "e", Context: "nexus"}, "ssh://me@nexus:2222/run/docker.sock", "nexus", true},
		{spec.Host{Name: "f", Context: "plain"}, "unix:///run/other.sock", "plain", false},
	}
	for _, tc := range cases {
		t.Run(tc.host.Name, func(t *testing.T) {
			ep, err := Resolve(tc.host)
			if err != nil {
				t.Fatal(err)
			}
			if ep.Host != tc.host.Name || ep.URL != tc.url || ep.Context != tc.context {
				t.Errorf("got host %q url %q context %q; want %q %q %q", ep.Host, ep.URL, ep.Context, tc.host.Name, tc.url, tc.context)
			}
			flags := strings.Join(ep.ssh, " ")
			if tc.ssh != (flags != "") {
				t.Errorf("ssh flags %q", flags)
			}
			if tc.ssh && (!strings.Contains(flags, "BatchMode=yes") || !strings.Contains(flags, "ConnectTimeout=")) {
				t.Errorf("ssh flags %q: want batch mode and a connect timeout", flags)
			}
		})
	}
}

func TestResolveErrorsNameTheHost(t *testing.T) {
	useConfigDir(t)
	tlsDir := t.TempDir()
	if _, _, err := testhost.WriteTLS(tlsDir, "10.0.0.5"); err != nil {
		t.Fatal(err)
	}
	noCert := t.TempDir()
	for _, f := range []string{"ca.pem", "key.pem"} {
		data, _ := os.ReadFile(filepath.Join(tlsDir, "client-tls", f))
		_ = os.WriteFile(filepath.Join(noCert, f), data, 0o600)
	}
	garbled := t.TempDir()
	for _, f := range []string{"ca.pem", "cert.pem", "key.pem"} {
		_ = os.WriteFile(filepath.Join(garbled, f), []byte("not PEM"), 0o600)
	}
	// A context whose TLS material is not PEM.
	addContext(t, "broken", "tcp://10.0.0.5:2376", &ctxtls.TLSData{CA: []byte("x"), Cert: []byte("x"), Key: []byte("x")})

	cases := []struct {
		name string
		host spec.Host
		msg  string
		hint string
	}{
		{"mistyped context", spec.Host{Name: "nexus", Context: "nexsu"}, `host nexus: docker context "nexsu" does not exist`, "docker context ls"},
		{"tls dir missing", spec.Host{Name: "tcp1", Docker: "tcp://10.0.0.5:2376", TLS: "/nonexistent/certs"}, "host tcp1 (tcp://10.0.0.5:2376): TLS material: open /nonexistent/certs/ca.pem: no such file", "ca.pem"},
		{"cert missing", spec.Host{Name: "tcp2", Docker: "tcp://10.0.0.5:2376", TLS: noCert}, "cert.pem: no such file", "cert.pem"},
		{"tls garbled", spec.Host{Name: "tcp3", Docker: "tcp://10.0.0.5:2376", TLS: garbled}, "host tcp3 (tcp://10.0.0.5:2376): TLS material:", "ca.pem"},
		{"tcp without tls", spec.Host{Name: "tcp4", Docker: "tcp://10.0.0.5:2376"}, "host tcp4 (tcp://10.0.0.5:2376): a tcp:// engine needs TLS material", "tls:"},
		{"http", spec.Host{Name: "web", Docker: "http://10.0.0.5"}, "cannot reach an engine over http://", ""},
		{"context with bad TLS material", spec.Host{Name: "br", Context: "broken"}, `host br: docker context "broken": failed to retrieve context tls info: ca.pem seems invalid`, "docker context inspect broken"},
		{"both", spec.Host{Name: "two", Context: "x", Docker: "ssh://a@b"}, "host two: both docker: and context: are set", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Resolve(tc.host)
			he := hostError(t, err)
			if !strings.Contains(he.Error(), tc.msg) || !strings.Contains(strings.Join(he.HintLines(), " "), tc.hint) {
				t.Errorf("got %q hint %q; want %q hint with %q", he.Error(), he.HintLines(), tc.msg, tc.hint)
			}
		})
	}
}

func TestResolveLocal(t *testing.T) {
	dir := useConfigDir(t)
	t.Setenv("DOCKER_HOST", "")
	t.Setenv("DOCKER_CONTEXT", "")
	ep, err := Resolve(spec.Host{})
	if err != nil || ep.URL != "unix:///var/run/docker.sock" {
		t.Fatalf("default: %+v, %v", ep, err)
	}

	t.Setenv("DOCKER_HOST", "ssh://me@nexus")
	if ep, err = Resolve(spec.Host{}); err != nil || ep.URL != "ssh://me@nexus" || len(ep.ssh) == 0 {
		t.Fatalf("DOCKER_HOST=ssh: %+v, %v", ep, err)
	}
	t.Setenv("DOCKER_HOST", "")

	t.Setenv("DOCKER_CONTEXT", "gone")
	_, err = Resolve(spec.Host{})
	if he := hostError(t, err); !strings.HasPrefix(he.Error(), `the local engine: docker context "gone" does not exist`) || !strings.Contains(he.Hint, "DOCKER_CONTEXT") {
		t.Errorf("got %q hint %q", he.Error(), he.Hint)
	}
	t.Setenv("DOCKER_CONTEXT", "")

	// The current context of the CLI configuration, as docker context use sets it.
	addContext(t, "other", "unix:///run/other.sock", nil)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"currentContext": "other"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if ep, err = Resolve(spec.Host{}); err != nil || ep.URL != "unix:///run/other.sock" || ep.Context != "other" {
		t.Fatalf("currentContext: %+v, %v", ep, err)
	}
}

// fakeEngine serves the few engine API calls Connect makes on a unix
// socket, answering with apiVersion; it counts /version requests.
type fakeEngine struct {
	url      string
	versions atomic.Int64
	// stop stops it answering, its socket gone.
	stop func()
}

func startFakeEngine(t *testing.T, apiVersion, id string) *fakeEngine {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "d.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeEngine{url: "unix://" + sock}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Api-Version", apiVersion)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/_ping"):
			fmt.Fprint(w, "OK")
		case strings.HasSuffix(r.URL.Path, "/info"):
			fmt.Fprintf(w, `{"ID": %q, "Name": "fake", "NCPU": 3, "MemTotal": 8341913600}`, id)
		case strings.HasSuffix(r.URL.Path, "/containers/json"), strings.HasSuffix(r.URL.Path, "/networks"):
			fmt.Fprint(w, `[]`)
		case strings.HasSuffix(r.URL.Path, "/volumes"):
			fmt.Fprint(w, `{"Volumes": []}`)
		case strings.HasSuffix(r.URL.Path, "/version"):
			f.versions.Add(1)
			fmt.Fprintf(w, `{"ApiVersion": %q}`, apiVersion)
		default:
			http.NotFound(w, r)
		}
	})
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(l) }()
	f.stop = func() { srv.Close() }
	t.Cleanup(f.stop)
	return f
}

func TestConnectChecksTheEngine(t *testing.T) {
	useConfigDir(t)
	ctx := context.Background()

	old := startFakeEngine(t, "1.40", "OLD")
	_, err := Connect(ctx, spec.Host{Name: "old", Docker: old.url}, Options{})
	if he := hostError(t, err); !strings.Contains(he.Error(), "host old") || !strings.Contains(he.Error(), "API 1.40; boxes needs 1.41") {
		t.Errorf("old engine: %q", he.Error())
	}

	_, err = Connect(ctx, spec.Host{Name: "gone", Docker: "unix:///nonexistent/docker.sock"}, Options{})
	if he := hostError(t, err); !strings.HasPrefix(he.Error(), "host gone (unix:///nonexistent/docker.sock): ") || !strings.Contains(he.Hint, "is dockerd running") {
		t.Errorf("no socket: %q hint %q", he.Error(), he.Hint)
	}

	e, err := Connect(ctx, spec.Host{Name: "new", Docker: startFakeEngine(t, "1.51", "NEW").url}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if e.ID() != "NEW" || e.Host != "new" || e.APIVersion() == "" {
		t.Errorf("engine %q of host %q, API %q", e.ID(), e.Host, e.APIVersion())
	}
	// The snapshot carries the machine's size, read with the engine's ID,
	// for the plan to hold boxes to.
	o, err := e.Observe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if o.CPUs != 3 || o.Memory != 8341913600 {
		t.Errorf("observed %d CPUs, %d bytes of memory", o.CPUs, o.Memory)
	}
}

// TestComposeSeesOneVersion: compose keeps the first API version (or
// error) it is told for the whole process, so every engine must tell it the
// same, without a call to the engine that could fail or differ.
func TestComposeSeesOneVersion(t *testing.T) {
	useConfigDir(t)
	ctx := context.Background()
	// A dead host first: it must not poison compose for the others.
	if _, err := Connect(ctx, spec.Host{Name: "dead", Docker: "unix:///nonexistent/docker.sock"}, Options{}); err == nil {
		t.Fatal("connected to a dead host")
	}
	for _, v := range []string{"1.51", "1.41", "1.45"} {
		f := startFakeEngine(t, v, "ID-"+v)
		e, err := Connect(ctx, spec.Host{Name: "h", Docker: f.url}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := e.compose()
		if err != nil {
			t.Fatal(err)
		}
		rv, ok := c.(interface {
			RuntimeVersion(context.Context) (string, error)
		})
		if !ok {
			t.Fatal("compose service has no RuntimeVersion")
		}
		got, err := rv.RuntimeVersion(ctx)
		if err != nil || got != MinAPIVersion {
			t.Errorf("engine at %s: compose sees %q, %v; want %s", v, got, err, MinAPIVersion)
		}
		if n := f.versions.Load(); n != 0 {
			t.Errorf("engine at %s: compose asked it for its version %d times", v, n)
		}
	}
}

// TestConnectBounded: a listener that accepts and never answers, behind
// TLS and behind ssh, fails within the connect timeout, naming the host.
func TestConnectBounded(t *testing.T) {
	useConfigDir(t)
	old := ConnectTimeout
	ConnectTimeout = 2 * time.Second
	t.Cleanup(func() { ConnectTimeout = old })

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	tlsDir := t.TempDir()
	if _, _, err := testhost.WriteTLS(tlsDir, "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	hosts := []spec.Host{
		{Name: "silent-tls", Docker: fmt.Sprintf("tcp://127.0.0.1:%d", port), TLS: filepath.Join(tlsDir, "client-tls")},
	}
	if _, err := os.Stat("/usr/bin/ssh"); err == nil {
		hosts = append(hosts, spec.Host{Name: "silent-ssh", Docker: fmt.Sprintf("ssh://me@127.0.0.1:%d", port)})
	}
	for _, h := range hosts {
		t.Run(h.Name, func(t *testing.T) {
			began := time.Now()
			_, err := Connect(context.Background(), h, Options{})
			took := time.Since(began)
			he := hostError(t, err)
			if !strings.HasPrefix(he.Error(), "host "+h.Name+" (") || took > ConnectTimeout+3*time.Second {
				t.Errorf("after %s: %q hint %q", took, he.Error(), he.Hint)
			}
			t.Logf("%s: %s after %s (hint: %s)", h.Name, he.Error(), took.Round(time.Millisecond), he.Hint)
			// Counting calls (the benchmarks) reaches the engine the same way.
			_, err = Connect(context.Background(), h, Options{CountCalls: true})
			if counted := hostError(t, err); counted.Error() != he.Error() {
				t.Errorf("with calls counted: %q, without: %q", counted.Error(), he.Error())
			}
		})
	}
}

// A second host entry of one engine is refused naming both, the host
// first in name order, its own address and the engine's ID.
func TestSameEngineAs(t *testing.T) {
	c := &Engine{Host: "alias", info: &engineInfo{id: "ONE"}, Endpoint: Endpoint{URL: "unix:///var/run/docker.sock"}}
	err := c.SameEngineAs("")
	if !errors.Is(err, ErrSameEngine) || err.Error() != "host alias (unix:///var/run/docker.sock): host alias and the local host reach the same Docker engine (ID ONE)" {
		t.Errorf("err = %v", err)
	}
	var he *HostError
	if !errors.As(err, &he) || len(he.HintLines()) != 1 {
		t.Errorf("no hint: %#v", err)
	}
}

// TestConnectRefused: a closed port gives the cause, not only "cannot connect".
func TestConnectRefused(t *testing.T) {
	useConfigDir(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	tlsDir := t.TempDir()
	if _, _, err := testhost.WriteTLS(tlsDir, "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	_, err = Connect(context.Background(), spec.Host{Name: "far", Docker: fmt.Sprintf("tcp://127.0.0.1:%d", port), TLS: filepath.Join(tlsDir, "client-tls")}, Options{})
	he := hostError(t, err)
	if !strings.Contains(he.Error(), "connection refused") || !strings.Contains(he.Hint, "nothing listens there") {
		t.Errorf("got %q hint %q", he.Error(), he.Hint)
	}
}

// ssh that could not connect has exited before the first request is
// written: the write's broken pipe gives way to ssh's own words, and so to
// the hint for them, as when the request was written first and the read
// found ssh gone. Whichever came first was a race.
func TestSSHGoneBeforeTheRequest(t *testing.T) {
	const ssh = "echo 'ssh: connect to host 127.0.0.1 port 9: Connection refused' >&2; exit 255"
	ep := Endpoint{Host: "far", URL: "ssh://root@127.0.0.1:9"}
	check := func(t *testing.T, werr error) {
		t.Helper()
		if werr == nil || !strings.Contains(werr.Error(), "Connection refused") {
			t.Fatalf("write after ssh exited: %v, want ssh's own words", werr)
		}
		var he *HostError
		if err := ep.explain(context.Background(), time.Millisecond, werr); !errors.As(err, &he) || !strings.Contains(he.Hint, "nothing listens there") || !strings.Contains(he.Error(), "Connection refused") {
			t.Errorf("explained: %v (hint %q)", err, he.Hint)
		}
	}
	// An ssh that cannot connect: it says so and exits at once.
	gone := func(t *testing.T) *sshConn {
		c, err := commandconn.New(context.Background(), "sh", "-c", ssh)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return newSSHConn(c)
	}
	t.Run("no read yet", func(t *testing.T) {
		conn := gone(t)
		var werr error
		for range 100 { // until ssh is gone and its stdin with it
			if _, werr = conn.Write([]byte("HEAD /_ping HTTP/1.1\r\n\r\n")); werr != nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		check(t, werr)
	})
	// The HTTP transport reads as soon as it connects: that read waits
	// for ssh, which closes its pipes, and the request's write then finds
	// a closed file.
	t.Run("read first", func(t *testing.T) {
		conn := gone(t)
		if _, err := conn.Read(make([]byte, 10)); err == nil {
			t.Fatal("read from an ssh that exited: no error")
		}
		_, werr := conn.Write([]byte("HEAD /_ping HTTP/1.1\r\n\r\n"))
		check(t, werr)
	})
}

// An exec's stdin through ssh ends with the hijacked connection's
// CloseWrite, which the docker client finds by the connection's type: the
// remote command (cat here, in ssh's place) reads its end and finishes.
func TestSSHConnKeepsHalfCloses(t *testing.T) {
	c, err := commandconn.New(context.Background(), "cat")
	if err != nil {
		t.Fatal(err)
	}
	conn := net.Conn(newSSHConn(c))
	defer conn.Close()
	if _, err := conn.Write([]byte("the end of stdin")); err != nil {
		t.Fatal(err)
	}
	cw, ok := conn.(interface{ CloseWrite() error })
	if !ok {
		t.Fatal("the ssh connection has no CloseWrite")
	}
	if err := cw.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if _, ok := conn.(interface{ CloseRead() error }); !ok {
		t.Error("the ssh connection has no CloseRead")
	}
	got := make(chan string, 1)
	go func() { b, _ := io.ReadAll(conn); got <- string(b) }()
	select {
	case s := <-got:
		if s != "the end of stdin" {
			t.Errorf("cat gave back %q", s)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("cat never saw the end of its stdin")
	}
}

// A write after the connection's user closed it fails at once: there are
// no ssh words to wait for.
func TestSSHConnClosedByItsUser(t *testing.T) {
	c, err := commandconn.New(context.Background(), "cat")
	if err != nil {
		t.Fatal(err)
	}
	conn := newSSHConn(c)
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := conn.Write([]byte("late")); err == nil {
		t.Fatal("a write after Close: no error")
	}
	if waited := time.Since(start); waited >= sshWordsWait {
		t.Errorf("a write after Close waited %v for ssh's words", waited)
	}
}
