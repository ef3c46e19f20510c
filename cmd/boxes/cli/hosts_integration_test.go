package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/internal/testhost"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/workspace"
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
// reached over ssh:// and one over tcp:// with TLS that lacks the image:
// the plan streams the image there (with its size), each box lands on its
// host, is proven ready at a URL this machine can use, the streamed image
// has the local one's ID, and the next plan has no changes. Real engine:
// two more dockerds, one reached through ssh's docker system dial-stdio and
// one over TLS with certificates checked, the image really streamed.
func TestIntegrationHostsPlanApply(t *testing.T) {
	image, _ := startWithItBoxes(t)
	began := time.Now()
	viaSSH := testhost.Start(t, testhost.Options{SSH: true, Images: []string{image}})
	viaTLS := testhost.Start(t, testhost.Options{TLS: true}) // without the image
	t.Logf("second engines up in %s (engine starts %s and %s)", time.Since(began).Round(time.Millisecond), viaSSH.StartTime.Round(time.Millisecond), viaTLS.StartTime.Round(time.Millisecond))
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
	id := dockerOut(t, "image", "inspect", "-f", "{{.Id}}", image)
	plan := boxes(t, dir, "plan", "--detailed-exitcode")
	stream := fmt.Sprintf("# image %s streamed from local to viatls (", strings.TrimPrefix(id, "sha256:")[:12])
	if plan.code != 2 || !strings.Contains(plan.stdout, stream) || !strings.Contains(plan.stdout, "), its ID checked after the load") ||
		!strings.Contains(plan.stdout, "Plan: 4 to create, 0 to recreate, 0 to start, 0 to stop, 0 to delete, 1 image to stream.") {
		t.Fatalf("plan: %+v", plan)
	}
	t.Logf("plan:\n%s", plan.stdout)
	start := time.Now()
	r := boxes(t, dir, "apply", "--auto-approve")
	if r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	t.Logf("apply of 4 boxes on 3 hosts, the image streamed to one: %s", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(r.stdout, "1 image streamed") {
		t.Errorf("apply does not say it streamed the image:\n%s", r.stdout)
	}
	if got, err := viaTLS.Client().ImageInspect(context.Background(), id); err != nil || got.ID != id {
		t.Errorf("image on the TLS host: %q %v, want %s", got.ID, err, id)
	}
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
// Real engine: readiness through ssh against a second dockerd is timed,
// where the fake answers at once; the test checks only that each apply
// succeeds, and logs the ratios.
func TestIntegrationRemoteReadiness(t *testing.T) {
	image, _ := startWithItBoxes(t)
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
// misconfigured fail the plan quickly, naming the host and what to fix;
// meanwhile a command about a box on the local engine works as ever. Real
// engine: the failures are real dials (TCP with TLS, the ssh binary) to
// ports that refuse or never answer, while exec runs in a real local box.
func TestIntegrationHostErrors(t *testing.T) {
	image, _ := startWithItBoxes(t)
	const local = "it-h9b-local"
	removeBoxes(local)
	t.Cleanup(func() { removeBoxes(local) })
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

	// A box on the local engine, in the same boxes.yaml as the bad host.
	bin := buildBoxes(t)
	dir := t.TempDir()
	yaml := func(far string) string {
		return "version: 1\nhosts:\n  far: " + far + "\nboxes:\n  " + local + ": {}\n  it-beta: {host: far}\n"
	}
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nboxes:\n  "+local+": {}\n")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply of the local box: %+v", r)
	}

	cases := []struct {
		name, host string
		want       []string
		// unreachable: nothing answers there (rather than a mistake found
		// before dialling).
		unreachable bool
	}{
		{"closed port", fmt.Sprintf("{docker: \"tcp://127.0.0.1:%d\", tls: %q}", closedPort, filepath.Join(tlsDir, "client-tls")),
			[]string{"host far (tcp://127.0.0.1:", "refused", "boxes: hint: nothing listens there"}, true},
		{"closed port over ssh", fmt.Sprintf("{docker: \"ssh://root@127.0.0.1:%d\"}", closedPort),
			[]string{"host far (ssh://root@127.0.0.1:", "refused", "boxes: hint: nothing listens there"}, true},
		{"silent listener over TLS", fmt.Sprintf("{docker: \"tcp://127.0.0.1:%d\", tls: %q}", silentPort, filepath.Join(tlsDir, "client-tls")),
			[]string{"host far (tcp://127.0.0.1:", "no answer within"}, true},
		{"silent listener over ssh", fmt.Sprintf("{docker: \"ssh://root@127.0.0.1:%d\"}", silentPort),
			[]string{"host far (ssh://root@127.0.0.1:", "no answer within"}, true},
		{"mistyped context", "{context: nexsu}",
			[]string{`host far: docker context "nexsu" does not exist`, "boxes: hint: docker context ls"}, false},
		{"missing TLS files", "{docker: \"tcp://127.0.0.1:2376\", tls: /nonexistent/certs}",
			[]string{"host far (tcp://127.0.0.1:2376): TLS material: open /nonexistent/certs/ca.pem", "boxes: hint: tls: names a directory"}, false},
		{"same engine twice", "{docker: \"unix:///var/run/docker.sock\"}",
			[]string{"host far and the local host reach the same Docker engine", "boxes: hint: keep one host entry per engine"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			writeFile(t, filepath.Join(dir, "boxes.yaml"), yaml(tc.host))
			// The plan runs as its own process while exec, here, uses
			// the local box.
			plan := exec.Command(bin, "-f", filepath.Join(dir, "boxes.yaml"), "plan")
			var stderr bytes.Buffer
			plan.Stderr = &stderr
			start := time.Now()
			if err := plan.Start(); err != nil {
				t.Fatal(err)
			}
			planDone := make(chan struct{})
			var took time.Duration
			go func() {
				plan.Wait() //nolint:errcheck // the exit code is checked below
				took = time.Since(start)
				close(planDone)
			}()
			execStart := time.Now()
			ex := boxes(t, dir, "exec", local, "--", "echo", "still here")
			execTook := time.Since(execStart)
			if ex.code != 0 || strings.TrimSpace(ex.stdout) != "still here" {
				t.Errorf("exec on the local box with host far %s: %+v", tc.name, ex)
			}
			<-planDone
			stillPlanning := ""
			if execTook < took {
				stillPlanning = ", while the plan still ran"
			}
			if code := plan.ProcessState.ExitCode(); code != 1 || took > 15*time.Second {
				t.Errorf("plan: exit %d after %s, want 1 within 15s", code, took)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			t.Logf("plan failed after %s; exec on the local box took %s%s:\n%s", took.Round(time.Millisecond), execTook.Round(time.Millisecond), stillPlanning, strings.TrimSpace(stderr.String()))
			if tc.unreachable && took > 5*time.Second && execTook >= took {
				t.Errorf("exec on the local box waited for the unreachable host (%s, the plan %s)", execTook, took)
			}
			// --target that leaves out far's box plans without it (two
			// entries for one engine stay an error: both are reached).
			if !tc.unreachable {
				return
			}
			if r := boxes(t, dir, "plan", "--detailed-exitcode", "--target", local); r.code != 0 || !strings.Contains(r.stdout, "No changes.") {
				t.Errorf("plan --target %s: %+v", local, r)
			}
		})
	}
}

// TestIntegrationSameEngineByTwoURLs: one engine reached by its socket and
// over ssh has one engine ID, and a workspace with two such host entries
// is refused when it observes them. Real engine: the IDs are a second
// dockerd's own, read through its socket and over ssh.
func TestIntegrationSameEngineByTwoURLs(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	remote := testhost.Start(t, testhost.Options{SSH: true})
	t.Setenv("PATH", remote.SSHPath+string(os.PathListSeparator)+os.Getenv("PATH"))
	ctx := context.Background()
	var reached []*docker.Engine
	for _, h := range []spec.Host{{}, {Name: "sock", Docker: remote.Socket}, {Name: "ssh", Docker: remote.SSH}} {
		e, err := docker.Connect(ctx, h, docker.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		reached = append(reached, e)
	}
	if reached[1].ID() != remote.ID || reached[2].ID() != remote.ID || reached[0].ID() == remote.ID {
		t.Fatalf("IDs: local %s, socket %s, ssh %s; engine %s", reached[0].ID(), reached[1].ID(), reached[2].ID(), remote.ID)
	}
	observe := func(hosts string) error {
		file := filepath.Join(t.TempDir(), "boxes.yaml")
		writeFile(t, file, "version: 1\nfleet: it\nhosts:\n"+hosts+"boxes:\n  it-same: {}\n")
		ws, err := workspace.Open(file, workspace.Options{Connect: docker.Connector{}, Shown: shown})
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		return ws.Observe(ctx)
	}
	sock := fmt.Sprintf("  sock: {docker: %q}\n", remote.Socket)
	if err := observe(sock); err != nil {
		t.Errorf("local and the extra engine: %v", err)
	}
	err := observe(sock + fmt.Sprintf("  ssh: {docker: %q}\n", remote.SSH))
	if err == nil || !strings.Contains(err.Error(), "host sock and host ssh reach the same Docker engine") {
		t.Errorf("err = %v", err)
	}
}

// TestIntegrationOpenThroughForward: a box bound to the loopback of a host
// reached over ssh is never shown at the remote's loopback as if it were
// this machine's: apply and ls say how it is reached, and open forwards a
// local port over ssh, through which the browser reaches the dashboard,
// signed in, for as long as open runs. Real engine: open's ssh forward
// reaches a real dashboard on the remote's loopback, which answers 200,
// and the port closes once open ends.
func TestIntegrationOpenThroughForward(t *testing.T) {
	step := trail(t)
	image, _ := startIntegration(t)
	remote := testhost.Start(t, testhost.Options{SSH: true, Images: []string{image}})
	step("the remote engine is up")
	t.Setenv("PATH", remote.SSHPath+string(os.PathListSeparator)+os.Getenv("PATH"))
	const box = "it-h9b-fwd"
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), fmt.Sprintf("version: 1\nhosts:\n  remote: {docker: %q}\nboxes:\n  %s: {host: remote}\n", remote.SSH, box))
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	r := boxes(t, dir, "apply", "--auto-approve")
	step("apply: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	if r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	if !strings.Contains(r.stdout+r.stderr, "on host remote's loopback (boxes open "+box+" forwards it here over ssh)") ||
		strings.Contains(r.stdout+r.stderr, "ready at http://127.0.0.1:") {
		t.Errorf("apply does not say how the box is reached:\n%s%s", r.stdout, r.stderr)
	}
	if ls := boxes(t, dir, "ls"); !strings.Contains(ls.stdout, "via ssh forward: boxes open "+box) || strings.Contains(ls.stdout, "http://127.0.0.1:") {
		t.Errorf("ls:\n%s", ls.stdout)
	}
	ls := boxes(t, dir, "ls", "--json")
	var rows []struct {
		Name  string `json:"name"`
		URL   string `json:"executor_url"`
		Reach string `json:"executor_reach"`
	}
	if err := json.Unmarshal([]byte(ls.stdout), &rows); err != nil || len(rows) != 1 || rows[0].URL != "" || rows[0].Reach != "ssh-forward" {
		t.Errorf("ls --json: %v %+v\n%s", err, rows, ls.stdout)
	}

	step("ls checked")
	openThroughForward(t, step, dir, box, "forwarded over ssh to 127.0.0.1:")
}

// trail records a test's steps, each with the time since it began, and
// logs them once more as the test's last words when it fails: after the
// logs its cleanups print, where the end of a long output shows them.
func trail(t *testing.T) func(format string, args ...any) {
	began := time.Now()
	var mu sync.Mutex
	var steps []string
	t.Cleanup(func() { // registered first: runs last
		if t.Failed() {
			mu.Lock()
			defer mu.Unlock()
			t.Logf("the steps done before the failure:\n%s", strings.Join(steps, "\n"))
		}
	})
	return func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		steps = append(steps, fmt.Sprintf("%7s ", time.Since(began).Round(100*time.Millisecond))+fmt.Sprintf(format, args...))
	}
}

// openThroughForward runs boxes open on box of dir's boxes.yaml with a
// browser that records the address it is given, follows it as a browser
// would and loads the page it was sent to: the page must load, signed in,
// through a forward whose address never holds the token, keep working
// after the handoff, and close once open ends on Ctrl-C; open must say
// via (how the forward reaches the box). Each step goes to step (trail).
func openThroughForward(t *testing.T, step func(string, ...any), dir, box, via string) {
	t.Helper()
	tmp := t.TempDir()
	got, redirect, status := filepath.Join(tmp, "url"), filepath.Join(tmp, "redirect"), filepath.Join(tmp, "status")
	browser := filepath.Join(tmp, "browser")
	writeFile(t, browser, "#!/bin/sh\nprintf '%s' \"$1\" > "+got+"\nto=$(curl -s -o /dev/null -w '%{redirect_url}' \"$1\")\n"+
		"curl -s -o /dev/null -w '%{http_code}' \"$to\" > "+status+".tmp\nprintf '%s' \"$to\" > "+redirect+"\nmv "+status+".tmp "+status+"\n")
	if err := os.Chmod(browser, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BOXES_BROWSER", browser)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	start := time.Now()
	go func() {
		done <- MainContext(ctx, Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, []string{"-f", filepath.Join(dir, "boxes.yaml"), "open", box})
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(status); err == nil {
			break
		}
		select {
		case code := <-done:
			step("open ended (exit %d) before the browser loaded the page:\n%s%s", code, out.String(), errb.String())
			t.Fatalf("open ended (exit %d) before the browser loaded the page:\n%s%s", code, out.String(), errb.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			step("the browser did not load the page within 60s:\n%s%s", out.String(), errb.String())
			t.Fatalf("the browser did not load the page within 60s:\n%s%s", out.String(), errb.String())
		}
	}
	t.Logf("open to the page loaded through the forward: %s", time.Since(start).Round(time.Millisecond))
	step("the browser loaded the page through the forward (url %q, redirect %q, status %q)", readFile(t, got), readFile(t, redirect), readFile(t, status))
	token := mustToken(t, dir, box)
	if u := readFile(t, got); !strings.HasPrefix(u, "http://127.0.0.1:") || strings.Contains(u, token) {
		t.Fatalf("the browser's command line was %q: it must not hold the token", u)
	}
	to := readFile(t, redirect)
	if !strings.HasPrefix(to, "http://127.0.0.1:") || !strings.HasSuffix(to, "/?token="+token) {
		t.Fatalf("the one-time address redirected to %q", to)
	}
	if s := readFile(t, status); s != "200" {
		t.Errorf("the dashboard answered %s through the forward", s)
	}
	// The page keeps working after the handoff, while open runs.
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(to)
	if err != nil {
		t.Fatalf("through the forward after the handoff: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("dashboard answered %s after the handoff", resp.Status)
	}
	step("the dashboard answered after the handoff: %s", resp.Status)
	cancel() // Ctrl-C
	select {
	case code := <-done:
		step("open ended: exit %d\n%s%s", code, out.String(), errb.String())
		if code != 0 {
			t.Errorf("open ended with exit %d:\n%s%s", code, out.String(), errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("open did not end on Ctrl-C")
	}
	if o := out.String(); !strings.Contains(o, via) || !strings.Contains(o, "until Ctrl-C") || strings.Contains(o+errb.String(), token) {
		t.Errorf("open said:\n%s%s", o, errb.String())
	}
	u, _ := url.Parse(to)
	if c, err := net.DialTimeout("tcp", u.Host, time.Second); err == nil {
		c.Close()
		t.Errorf("the forwarded port %s still answers after open ended", u.Host)
	}
}

// syncBuffer is a bytes.Buffer written by a command while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
