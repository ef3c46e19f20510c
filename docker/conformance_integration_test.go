package docker_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/docker/docker/client"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/conformance"
	"github.com/hermes-box/boxes/spec"
)

// TestIntegrationConformance runs the engine contract's suite
// (internal/conformance) on the local Docker engine, the engine gone
// through a socket proxy of the test's own that it closes. Real engine: the
// suite's behaviour is the one the fake engine is held to.
func TestIntegrationConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	ctx := context.Background()
	connect := func(t *testing.T, h spec.Host) *docker.Engine {
		t.Helper()
		e, err := docker.Connect(ctx, h, docker.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	local := connect(t, spec.Host{})
	defer local.Close()
	image, err := local.ImageID(ctx, "hermes-box-lite:test")
	if err != nil {
		t.Fatalf("test image missing (make test-image): %v", err)
	}
	socket := engineSocket(t)

	conformance.Run(t, conformance.Harness{
		Engine: func(t *testing.T) engine.Engine { return connect(t, spec.Host{}) },
		Image:  image,
		StopBehind: func(t *testing.T, box string) {
			var names []string
			for _, svc := range compose.Services {
				names = append(names, compose.ContainerName(box, svc))
			}
			dockerCLI(t, append([]string{"stop"}, names...)...)
		},
		RemoveBehind: func(t *testing.T, box, service string) {
			dockerCLI(t, "rm", "-f", compose.ContainerName(box, service))
		},
		Gone: func(t *testing.T) (engine.Engine, func()) {
			p := startProxy(t, socket)
			return connect(t, spec.Host{Name: "proxied", Docker: "unix://" + p.path}), p.close
		},
		Cleanup: func(t *testing.T, boxes []string) {
			for _, b := range boxes {
				removeLabelled("container", compose.BoxLabel+"="+b)
				removeLabelled("container", compose.LeaseBoxLabel+"="+b)
				removeLabelled("network", compose.BoxLabel+"="+b)
				removeLabelled("volume", compose.BoxLabel+"="+b)
			}
		},
	})
}

// engineSocket is the path of the local engine's socket.
func engineSocket(t *testing.T) string {
	host := os.Getenv("DOCKER_HOST")
	if host == "" {
		host = client.DefaultDockerHost
	}
	path, ok := strings.CutPrefix(host, "unix://")
	if !ok {
		t.Skipf("the engine is at %s, not on a unix socket the test can put a proxy in front of", host)
	}
	return path
}

func dockerCLI(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("docker", args...).CombinedOutput(); err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// removeLabelled removes every object of kind (container, network,
// volume) with label, by ID.
func removeLabelled(kind, label string) {
	ls := []string{kind, "ls", "-q", "--filter", "label=" + label}
	if kind == "container" {
		ls = append(ls, "-a")
	}
	ids, _ := exec.Command("docker", ls...).Output()
	for _, id := range strings.Fields(string(ids)) {
		rm := []string{kind, "rm", id}
		if kind == "container" {
			rm = []string{"rm", "-f", id}
		}
		_ = exec.Command("docker", rm...).Run()
	}
}

// proxy forwards a unix socket of the test's own to the engine's, until
// closed: then every connection through it is cut and no new one is taken.
type proxy struct {
	path string
	l    net.Listener

	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	dir, err := os.MkdirTemp("", "boxes-proxy-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := &proxy{path: filepath.Join(dir, "engine.sock")}
	if p.l, err = net.Listen("unix", p.path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	go p.serve(target)
	return p
}

func (p *proxy) serve(target string) {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("unix", target)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, up) {
			return
		}
		go pipe(up, c)
		go pipe(c, up)
	}
}

// track keeps c and up to cut them on close; false once closed.
func (p *proxy) track(c, up net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		up.Close()
		return false
	}
	p.conns = append(p.conns, c, up)
	return true
}

// pipe copies from to to, then passes the end of from's stream on (an
// exec's input ends so).
func pipe(to, from net.Conn) {
	_, err := io.Copy(to, from)
	if cw, ok := to.(interface{ CloseWrite() error }); ok && err == nil {
		_ = cw.CloseWrite()
		return
	}
	if err != nil && !errors.Is(err, net.ErrClosed) {
		to.Close()
	}
}

// close makes the engine gone for whoever reaches it through p.
func (p *proxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	p.l.Close()
	for _, c := range p.conns {
		c.Close()
	}
}
