package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/statedir"
)

// engineProxy fronts the real engine with a unix socket and returns its
// DOCKER_HOST. Each request goes to intercept first, with the handler that
// forwards it to the engine; everything else, hijacked streams included,
// goes through.
func engineProxy(t *testing.T, intercept func(w http.ResponseWriter, r *http.Request, forward http.Handler)) string {
	t.Helper()
	target := "/var/run/docker.sock"
	if h := os.Getenv("DOCKER_HOST"); strings.HasPrefix(h, "unix://") {
		target = strings.TrimPrefix(h, "unix://")
	} else if h != "" {
		t.Skipf("the proxy fronts a unix socket engine, not %s", h)
	}
	sock := filepath.Join(t.TempDir(), "engine.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme, r.Out.URL.Host = "http", "docker"
		},
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", target)
		}},
		FlushInterval: -1,
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { intercept(w, r, proxy) })}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "unix://" + sock
}

// refusingEngine is the real engine behind engineProxy, refusing as the
// engine itself would every copy into a container of more than refuseOver
// bytes: a restore the engine rejects for a reason boxes cannot check
// beforehand. It returns the DOCKER_HOST and how many copies it refused.
func refusingEngine(t *testing.T, refuseOver int) (string, *atomic.Int32) {
	t.Helper()
	var refused atomic.Int32
	host := engineProxy(t, func(w http.ResponseWriter, r *http.Request, forward http.Handler) {
		if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/archive") {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			if len(body) > refuseOver {
				refused.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = io.WriteString(w, `{"message":"Error processing tar file(exit status 1): no space left on device"}`)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		forward.ServeHTTP(w, r)
	})
	return host, &refused
}

// TestIntegrationRestoreRefused: a load whose restore the engine refuses
// removes what it created (the box's containers, volumes and network, its
// token and restore record, and nothing of any other box), says why, and
// leaves a plan that creates the box again; a load after that succeeds.
// Real engine: only the copy into the container is refused (by a proxy in
// front of the engine), so what load undoes is what compose really made.
func TestIntegrationRestoreRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image := testImage(t, "BOXES_TEST_IMAGE", "hermes-box-lite:test")
	const src, dst = "it-h10r-src", "it-h10r-dst"
	removeWithOneOffs(src, dst)
	t.Cleanup(func() { removeWithOneOffs(src, dst) })
	t.Setenv(backup.EnvPassphrase, "correct horse battery staple")
	dir := t.TempDir()
	declare := func(boxes string) {
		writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nfleet: it-h10r\nboxes:\n"+boxes)
	}
	declare("  " + src + ": {}\n")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	if r := boxes(t, dir, "exec", src, "--", "sh", "-c", "echo kept > /data/home/agent/marker && head -c 4M /dev/urandom > /data/home/agent/big"); r.code != 0 {
		t.Fatalf("writing the marker: %+v", r)
	}
	if r := boxes(t, dir, "save", src); r.code != 0 {
		t.Fatalf("save: %+v", r)
	}
	saved, _ := filepath.Glob(filepath.Join(dir, "backups", src+"-*"))
	if len(saved) != 1 {
		t.Fatalf("backups: %v", saved)
	}
	declare("  " + src + ": {}\n  " + dst + ": {}\n")

	host, refused := refusingEngine(t, 1<<20)
	t.Setenv("DOCKER_HOST", host)
	r := boxes(t, dir, "load", saved[0], dst)
	if r.code == 0 || refused.Load() != 1 {
		t.Fatalf("load through an engine that refuses the restore (%d refused): %+v", refused.Load(), r)
	}
	t.Logf("load through the refusing engine:\n%s", r.stderr)
	for _, want := range []string{"no space left on device", "what the restore created was removed (3 containers, 2 networks, 2 volumes)", "boxes verify"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("load's error lacks %q:\n%s", want, r.stderr)
		}
	}
	os.Unsetenv("DOCKER_HOST")

	if c, v, n := labelled(t, dst); c+v+n != 0 {
		t.Errorf("%s keeps %d containers, %d volumes, %d networks", dst, c, v, n)
	}
	if ids := oneOffs(t, dst); len(ids) > 0 {
		t.Errorf("throwaway containers of %s left: %v", dst, ids)
	}
	if _, ok, err := statedir.Beside(filepath.Join(dir, "boxes.yaml")).Restores().Get(dst); ok || err != nil {
		t.Errorf("the restore record is left (%v)", err)
	}
	if _, ok, _ := statedir.Beside(filepath.Join(dir, "boxes.yaml")).Tokens().Get(dst); ok {
		t.Error("the token is left")
	}
	if c, v, n := labelled(t, src); c != 3 || v != 2 || n != 2 {
		t.Errorf("%s, which the load did not make, has %d containers, %d volumes, %d networks", src, c, v, n)
	}
	if p := boxes(t, dir, "plan"); p.code != 0 || !strings.Contains(p.stdout, "1 to create") || strings.Contains(p.stdout, "incomplete") {
		t.Errorf("plan after the refused restore: %+v", p)
	}

	if r := boxes(t, dir, "load", saved[0], dst); r.code != 0 {
		t.Fatalf("load on the engine itself: %+v", r)
	}
	if got := marker(t, dir, dst); got != "kept" {
		t.Errorf("%s's marker after the load: %q", dst, got)
	}
}
