package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/internal/testhost"
	"github.com/hermes-box/boxes/spec"
)

// boxesOn lists the boxes with containers on the engine behind c.
func boxesOn(t *testing.T, e *testhost.Engine) map[string]bool {
	t.Helper()
	cs, err := e.Client().ContainerList(context.Background(), container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", compose.ManagedLabel+"=1"))})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, c := range cs {
		found[c.Labels[compose.BoxLabel]] = true
	}
	return found
}

// TestIntegrationHostsPlanApply: one plan over the local engine, an engine
// reached over ssh:// and one over tcp:// with TLS: each box lands on its
// host, is proven ready at a URL this machine can use, and the next plan
// has no changes.
func TestIntegrationHostsPlanApply(t *testing.T) {
	image, _ := startIntegration(t)
	began := time.Now()
	viaSSH := testhost.Start(t, testhost.Options{SSH: true, Images: []string{image}})
	viaTLS := testhost.Start(t, testhost.Options{TLS: true, Images: []string{image}})
	t.Logf("second engines up with the image in %s (engine starts %s and %s)", time.Since(began).Round(time.Millisecond), viaSSH.StartTime.Round(time.Millisecond), viaTLS.StartTime.Round(time.Millisecond))
	t.Setenv("PATH", viaSSH.SSHPath+string(os.PathListSeparator)+os.Getenv("PATH"))

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), fmt.Sprintf(`version: 1
hosts:
  viassh: {docker: %q}
  viatls: {docker: %q, tls: %q}
boxes:
  it-alpha: {}
  it-beta: {host: viassh, executor: {bind: 0.0.0.0}}
  it-gamma: {host: viatls, executor: {bind: 0.0.0.0}}
  it-delta: {host: viassh}
`, viaSSH.SSH, viaTLS.TCP, viaTLS.TLSDir))
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	start := time.Now()
	r := boxes(t, dir, "apply", "--auto-approve")
	if r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	t.Logf("apply of 4 boxes on 3 hosts: %s", time.Since(start).Round(time.Millisecond))
	if got := boxesOn(t, viaSSH); !got["it-beta"] || !got["it-delta"] || len(got) != 2 {
		t.Errorf("boxes on the ssh host: %v", got)
	}
	if got := boxesOn(t, viaTLS); !got["it-gamma"] || len(got) != 1 {
		t.Errorf("boxes on the TLS host: %v", got)
	}
	if out := dockerOut(t, "ps", "-a", "-q", "--filter", "label="+compose.BoxLabel+"=it-beta"); out != "" {
		t.Errorf("it-beta has containers on the local engine: %s", out)
	}
	if out := dockerOut(t, "ps", "-q", "--filter", "label="+compose.BoxLabel+"=it-alpha"); out == "" {
		t.Errorf("it-alpha is not running on the local engine")
	}
	if r := boxes(t, dir, "plan", "--detailed-exitcode"); r.code != 0 || !strings.Contains(r.stdout, "No changes.") {
		t.Fatalf("plan after apply: %+v", r)
	}
	ls := boxes(t, dir, "ls")
	for _, want := range []string{"http://" + viaSSH.Addr + ":", "http://" + viaTLS.Addr + ":"} {
		if !strings.Contains(ls.stdout, want) {
			t.Errorf("ls does not show an executor at %s:\n%s", want, ls.stdout)
		}
	}
}

// TestIntegrationRemoteReadiness: a box on a remote host is proven ready as
// fast as a local one (within 1.2×), not after the healthcheck's interval.
func TestIntegrationRemoteReadiness(t *testing.T) {
	image, _ := startIntegration(t)
	remote := testhost.Start(t, testhost.Options{SSH: true, Images: []string{image}})
	t.Setenv("PATH", remote.SSHPath+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir := t.TempDir()
	write := func(boxesYAML string) {
		writeFile(t, filepath.Join(dir, "boxes.yaml"), fmt.Sprintf("version: 1\nhosts:\n  remote: {docker: %q}\nboxes:\n%s", remote.SSH, boxesYAML))
	}
	write("  it-alpha: {}\n")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	timed := func(what string) time.Duration {
		start := time.Now()
		if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
			t.Fatalf("apply %s: %+v", what, r)
		}
		return time.Since(start)
	}
	// Warm both engines' caches of the image's layers the same way first.
	local := timed("local box")
	write("  it-alpha: {}\n  it-beta: {host: remote, executor: {bind: 0.0.0.0}}\n")
	remoteOpen := timed("remote box on 0.0.0.0")
	write("  it-alpha: {}\n  it-beta: {host: remote, executor: {bind: 0.0.0.0}}\n  it-gamma: {host: remote}\n")
	remoteLoopback := timed("remote box on its loopback")
	t.Logf("apply of one new box: local %s, remote (published on its address) %s (%.2f×), remote (on its loopback, probed from inside) %s (%.2f×)",
		local.Round(time.Millisecond), remoteOpen.Round(time.Millisecond), float64(remoteOpen)/float64(local),
		remoteLoopback.Round(time.Millisecond), float64(remoteLoopback)/float64(local))
	// The ratios are figures for the bench and the notes, not a pass mark:
	// timings on a shared machine vary too much to fail a test on.
}

// TestIntegrationHostErrors: hosts that cannot be reached or are
// misconfigured fail the plan quickly, naming the host and what to fix.
func TestIntegrationHostErrors(t *testing.T) {
	image, _ := startIntegration(t)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	tlsDir := t.TempDir()
	if _, _, err := testhost.WriteTLS(tlsDir, "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	silentPort := silent.Addr().(*net.TCPAddr).Port

	cases := []struct {
		name, host string
		want       []string
	}{
		{"closed port", fmt.Sprintf("{docker: \"tcp://127.0.0.1:%d\", tls: %q}", closedPort, filepath.Join(tlsDir, "client-tls")),
			[]string{"host far (tcp://127.0.0.1:", "refused", "boxes: hint: nothing listens there"}},
		{"silent listener over TLS", fmt.Sprintf("{docker: \"tcp://127.0.0.1:%d\", tls: %q}", silentPort, filepath.Join(tlsDir, "client-tls")),
			[]string{"host far (tcp://127.0.0.1:", "no answer within"}},
		{"silent listener over ssh", fmt.Sprintf("{docker: \"ssh://root@127.0.0.1:%d\"}", silentPort),
			[]string{"host far (ssh://root@127.0.0.1:", "no answer within"}},
		{"mistyped context", "{context: nexsu}",
			[]string{`host far: docker context "nexsu" does not exist`, "boxes: hint: docker context ls"}},
		{"missing TLS files", "{docker: \"tcp://127.0.0.1:2376\", tls: /nonexistent/certs}",
			[]string{"host far (tcp://127.0.0.1:2376): TLS material: open /nonexistent/certs/ca.pem", "boxes: hint: tls: names a directory"}},
		{"same engine twice", "{docker: \"unix:///var/run/docker.sock\"}",
			[]string{"host far and the local host reach the same Docker engine", "boxes: hint: keep one host entry per engine"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nhosts:\n  far: "+tc.host+"\nboxes:\n  it-alpha: {}\n  it-beta: {host: far}\n")
			if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
				t.Fatalf("lock image: %+v", r)
			}
			start := time.Now()
			r := boxes(t, dir, "plan")
			took := time.Since(start)
			if r.code != 1 || took > 15*time.Second {
				t.Errorf("plan: exit %d after %s, want 1 within 15s", r.code, took)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			t.Logf("after %s:\n%s", took.Round(time.Millisecond), strings.TrimSpace(r.stderr))
		})
	}
}

// TestIntegrationSameEngineByTwoURLs: one engine reached by its socket and
// over ssh has one engine ID, and two such host entries are refused.
func TestIntegrationSameEngineByTwoURLs(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	remote := testhost.Start(t, testhost.Options{SSH: true})
	t.Setenv("PATH", remote.SSHPath+string(os.PathListSeparator)+os.Getenv("PATH"))
	ctx := context.Background()
	var engines []*docker.Engine
	for _, h := range []spec.Host{{}, {Name: "sock", Docker: remote.Socket}, {Name: "ssh", Docker: remote.SSH}} {
		e, err := docker.Connect(ctx, h, docker.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		engines = append(engines, e)
	}
	if engines[1].ID() != remote.ID || engines[2].ID() != remote.ID || engines[0].ID() == remote.ID {
		t.Fatalf("IDs: local %s, socket %s, ssh %s; engine %s", engines[0].ID(), engines[1].ID(), engines[2].ID(), remote.ID)
	}
	if err := docker.DistinctEngines(engines[:2]); err != nil {
		t.Errorf("local and the extra engine: %v", err)
	}
	err := docker.DistinctEngines(engines)
	if err == nil || !strings.Contains(err.Error(), "host sock and host ssh reach the same Docker engine") {
		t.Errorf("err = %v", err)
	}
}
