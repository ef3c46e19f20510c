package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	dockerimage "github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/hermes-box/boxes/internal/testhost"
	"github.com/hermes-box/boxes/spec"
)

// TestIntegrationRegistryPullsWithThisMachinesCredentials: a private
// registry with htpasswd users (Debian's docker-registry), and two engines
// in network namespaces that lack the image and have never logged in
// anywhere. lock image --push pushes the test image with the credentials of
// a docker configuration made for the test and records the pushed digest;
// the plan pulls it on both hosts; apply fails only their boxes, naming the
// registry and the host with its hint, while the password is wrong, while
// the configuration has no credentials and while the registry is down; then
// both hosts pull it with this machine's credentials and their boxes become
// ready on the very image.
//
// Real engine: a fake cannot prove that the engine takes the
// X-Registry-Auth the docker/cli library builds from auths as a real
// registry checks it, what text a real engine reports a refused or
// unreachable registry with (the classification reads it), that a push's
// aux message carries the digest hosts then pull, and that an engine of
// its own trusts the registry's TLS through its certs.d.
func TestIntegrationRegistryPullsWithThisMachinesCredentials(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image := testImage(t, "BOXES_TEST_IMAGE", "hermes-box-lite:test")
	const local, onA, onB = "it-reg-local", "it-reg-a", "it-reg-b"
	removeBoxes(local)
	t.Cleanup(func() { removeBoxes(local) })
	id := dockerOut(t, "image", "inspect", "-f", "{{.Id}}", image)

	began := time.Now()
	hostA := testhost.Start(t, testhost.Options{TLS: true}) // without the image
	hostB := testhost.Start(t, testhost.Options{TLS: true}) // without the image
	const user, password = "alice", "s3cret-for-the-test"
	pushTo := testhost.StartRegistry(t, user, password)
	// The same registry (storage and users) where both engines reach this
	// machine, over TLS with a CA made for it that only they trust.
	reg := pushTo.ListenTLS(t, hostA.HostAddr)
	for _, e := range []*testhost.Engine{hostA, hostB} {
		if err := e.TrustRegistry(reg.Addr, reg.CA); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("two engines and the registry (%s, %s) up in %s", pushTo.Addr, reg.Addr, time.Since(began).Round(time.Millisecond))

	// This machine's docker configuration: the test's own, never the user's.
	config := t.TempDir()
	t.Setenv("DOCKER_CONFIG", config)
	login := func(password string, registries ...string) {
		t.Helper()
		auths := map[string]any{}
		for _, r := range registries {
			auths[r] = map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + password))}
		}
		data, err := json.Marshal(map[string]any{"auths": auths})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(config, "config.json"), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	// A fleet of its own: boxes of the tests' fleet that other tests run
	// on the local engine meanwhile are none of its business.
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), fmt.Sprintf(`version: 1
fleet: it-registry
hosts:
  hosta: {docker: %q, tls: %q}
  hostb: {docker: %q, tls: %q}
boxes:
  %s: {}
  %s: {host: hosta, executor: {bind: 0.0.0.0}}
  %s: {host: hostb, executor: {bind: 0.0.0.0}}
`, hostA.TCP, hostA.TLSDir, hostB.TCP, hostB.TLSDir, local, onA, onB))

	// The push: refused without credentials, and then nothing is written.
	repo := pushTo.Addr + "/hbl"
	untag(t, repo+":test")
	login(password) // no registries
	r := boxes(t, dir, "lock", "image", image, "--push", repo)
	if r.code != 1 || !strings.Contains(r.stderr, "pushing "+repo+":test on the local host: registry "+pushTo.Addr+" wants credentials") ||
		!strings.Contains(r.stderr, "boxes: hint: docker login "+pushTo.Addr+" on this machine") {
		t.Fatalf("lock image --push without credentials: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "boxes.lock")); !os.IsNotExist(err) {
		t.Fatalf("a failed push wrote boxes.lock: %v", err)
	}
	login(password, pushTo.Addr)
	start := time.Now()
	r = boxes(t, dir, "lock", "image", image, "--push", repo)
	if r.code != 0 {
		t.Fatalf("lock image --push: %+v", r)
	}
	t.Logf("lock image --push: %s\n%s", time.Since(start).Round(time.Millisecond), r.stdout)
	lockFile := filepath.Join(dir, "boxes.lock")
	lock, err := spec.LoadLock(lockFile)
	if err != nil {
		t.Fatal(err)
	}
	pushed := regexp.MustCompile(`^` + regexp.QuoteMeta(repo) + `@(sha256:[0-9a-f]{64})$`).FindStringSubmatch(lock.Image.Ref)
	if pushed == nil || lock.Image.ID != id || !strings.Contains(r.stdout, "pushed as "+lock.Image.Ref) {
		t.Fatalf("lock image after the push: %+v; stdout %s", lock.Image, r.stdout)
	}
	untag(t, lock.Image.Ref)
	// The hosts reach the registry by another name; a digest is the same
	// under every name of one registry.
	ref := reg.Addr + "/hbl@" + pushed[1]
	lock.Image.Ref = ref
	if err := spec.WriteLock(lockFile, lock); err != nil {
		t.Fatal(err)
	}

	plan := boxes(t, dir, "plan", "--detailed-exitcode")
	short := strings.TrimPrefix(id, "sha256:")[:12]
	for _, h := range []string{"hosta", "hostb"} {
		if want := fmt.Sprintf("# image %s pulled on %s from %s", short, h, ref); !strings.Contains(plan.stdout, want) {
			t.Errorf("the plan does not show %q", want)
		}
	}
	if plan.code != 2 || !strings.Contains(plan.stdout, "Plan: 3 to create, 0 to recreate, 0 to start, 0 to stop, 0 to delete, 2 images to pull.") {
		t.Fatalf("plan: %+v", plan)
	}
	t.Logf("plan:\n%s", plan.stdout)

	// Each failure: only the two hosts' boxes fail, each naming the
	// registry and its host, with the hint; the local box is applied.
	failing := func(what, problem, hint string) {
		t.Helper()
		r := boxes(t, dir, "apply", "--auto-approve")
		t.Logf("apply %s: exit %d\n%s", what, r.code, r.stderr)
		if r.code != 1 {
			t.Fatalf("apply %s: %+v", what, r)
		}
		for _, c := range []struct{ box, host string }{{onA, "hosta"}, {onB, "hostb"}} {
			want := fmt.Sprintf("boxes: error: %s: bringing image %s to host %s: pulling %s on host %s: %s", c.box, short, c.host, ref, c.host, problem)
			if !strings.Contains(r.stderr, want) {
				t.Errorf("apply %s: no %q", what, want)
			}
		}
		if !strings.Contains(r.stderr, "boxes: hint: "+hint) || strings.Contains(r.stderr, local+":") {
			t.Errorf("apply %s: the hint or the local box", what)
		}
		if state := dockerOut(t, "inspect", "-f", "{{.State.Status}}", "hbl-"+local+"-executor-1"); state != "running" {
			t.Errorf("apply %s: the local box's executor is %s", what, state)
		}
		for _, e := range []*testhost.Engine{hostA, hostB} {
			if got := boxesOn(t, e); len(got) != 0 {
				t.Errorf("apply %s: boxes on %s: %v", what, e.Name, got)
			}
			if _, err := e.Client().ImageInspect(context.Background(), id); err == nil {
				t.Errorf("apply %s: %s has the image", what, e.Name)
			}
		}
	}
	login("wrong-password", reg.Addr)
	failing("with a wrong password", "registry "+reg.Addr+" refused the credentials of alice from the docker configuration of this machine: ",
		"docker login "+reg.Addr+" on this machine")
	login(password, pushTo.Addr) // none for the name the hosts use
	failing("without credentials", "registry "+reg.Addr+" wants credentials, and the docker configuration of this machine has none for it: ",
		"docker login "+reg.Addr+" on this machine")
	login(password, reg.Addr)
	reg.Stop()
	failing("with the registry down", "the engine there cannot reach registry "+reg.Addr+": ", "the engine of host ")
	if err := reg.Start(); err != nil {
		t.Fatal(err)
	}

	start = time.Now()
	r = boxes(t, dir, "apply", "--auto-approve")
	if r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	t.Logf("apply pulling the image on two hosts: %s\n%s", time.Since(start).Round(time.Millisecond), r.stdout)
	if !strings.Contains(r.stdout, "2 images pulled") {
		t.Errorf("apply does not say it pulled the images:\n%s", r.stdout)
	}
	for _, c := range []struct {
		e   *testhost.Engine
		box string
	}{{hostA, onA}, {hostB, onB}} {
		if got, err := c.e.Client().ImageInspect(context.Background(), id); err != nil || got.ID != id {
			t.Errorf("image on %s: %q %v, want %s", c.e.Name, got.ID, err, id)
		}
		if got := boxesOn(t, c.e); !got[c.box] || len(got) != 1 {
			t.Errorf("boxes on %s: %v", c.e.Name, got)
		}
	}
	if r := boxes(t, dir, "plan", "--detailed-exitcode"); r.code != 0 || !strings.Contains(r.stdout, "No changes.") {
		t.Fatalf("plan after apply: %+v", r)
	}
}

// untag removes ref from the local engine when the test ends: the tag or
// digest a push left on the test image, never the image itself.
func untag(t *testing.T, ref string) {
	t.Cleanup(func() {
		c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.ImageRemove(context.Background(), ref, dockerimage.RemoveOptions{})
	})
}
