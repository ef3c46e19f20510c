package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-box/boxes/doctor"
	"github.com/hermes-box/boxes/hb"
)

// boxesIn runs boxes with stdin and a TTY flag of the test's choosing.
func boxesIn(t *testing.T, dir string, in string, tty bool, args ...string) run {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(Streams{In: strings.NewReader(in), Out: &out, Err: &errb, IsTTY: tty}, append([]string{"-f", filepath.Join(dir, "boxes.yaml")}, args...))
	return run{code, out.String(), errb.String()}
}

// TestIntegrationInBox: exec, enter, logs, open and doctor on a box, their
// refusals, an exec cut short by a recreate, and doctor with a wrong token
// or a stopped executor. Real engine: commands run, read stdin and exit in
// the agent container, tmux keeps its session, the logs are the
// containers', and the dashboard and the MCP checks answer on real ports.
func TestIntegrationInBox(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image := testImage(t, "BOXES_TEST_IMAGE", "hermes-box-lite:test")
	const box, stopped = "it-inbox", "it-inbox-off"
	removeBoxes(box, stopped)
	t.Cleanup(func() { removeBoxes(box, stopped) })

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nboxes:\n  "+box+": {}\n  "+stopped+": {state: stopped}\n  it-inbox-none: {}\n")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	if r := boxes(t, dir, "apply", "--auto-approve", "--target", box, "--target", stopped); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}

	t.Run("exec", func(t *testing.T) {
		r := boxes(t, dir, "exec", box, "--", "sh", "-c", "id -un; pwd; echo to-stderr >&2; exit 7")
		if r.code != 7 || r.stdout != "agent\n/data/home/agent\n" || r.stderr != "to-stderr\n" {
			t.Errorf("exec: %+v", r)
		}
		if r := boxes(t, dir, "exec", "-u", "root", box, "--", "id", "-u"); r.code != 0 || r.stdout != "0\n" {
			t.Errorf("exec -u root: %+v", r)
		}
		if r := boxesIn(t, dir, "line one\nline two\n", false, "exec", "-i", box, "--", "wc", "-l"); r.code != 0 || strings.TrimSpace(r.stdout) != "2" {
			t.Errorf("exec -i: %+v", r)
		}
		if r := boxesIn(t, dir, "not passed", false, "exec", box, "--", "cat"); r.code != 0 || r.stdout != "" {
			t.Errorf("exec without -i read stdin: %+v", r)
		}
	})

	t.Run("enter", func(t *testing.T) {
		if r := boxes(t, dir, "enter", box); r.code != 1 || !strings.Contains(r.stderr, "boxes: error: enter needs a terminal\n") ||
			!strings.Contains(r.stderr, "boxes exec "+box+" -- CMD") {
			t.Errorf("enter without a terminal: %+v", r)
		}
		// A terminal session that detaches at once (C-b d) leaves the tmux
		// session main running, as agent.
		done := make(chan run, 1)
		go func() { done <- boxesIn(t, dir, "\x02d", true, "enter", box) }()
		select {
		case r := <-done:
			if r.code != 0 {
				t.Errorf("enter: %+v", r)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("enter did not return after C-b d")
		}
		r := boxes(t, dir, "exec", box, "--", "tmux", "list-sessions", "-F", "#{session_name}")
		if r.code != 0 || r.stdout != "main\n" {
			t.Errorf("tmux sessions after enter: %+v", r)
		}
	})

	t.Run("logs", func(t *testing.T) {
		if r := boxes(t, dir, "logs", box); r.code != 0 || !strings.Contains(r.stdout+r.stderr, "agent: ready") {
			t.Errorf("logs: %+v", r)
		}
		if r := boxes(t, dir, "logs", box, "executor", "-n", "1"); r.code != 0 || strings.Count(r.stdout+r.stderr, "\n") != 1 {
			t.Errorf("logs executor -n 1: %+v", r)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		for name, tc := range map[string]struct {
			args []string
			want []string
		}{
			"undeclared box":  {[]string{"exec", "it-nope", "--", "true"}, []string{`boxes: error: no box "it-nope" in `, "boxes: hint: declared boxes: " + box}},
			"box not created": {[]string{"exec", "it-inbox-none", "--", "true"}, []string{"box it-inbox-none has no agent container", "boxes plan"}},
			"stopped box":     {[]string{"exec", stopped, "--", "true"}, []string{"box " + stopped + ": the agent container is", "boxes: hint: boxes start " + stopped}},
			"no command":      {[]string{"exec", box}, []string{"exec needs a box name, then -- and the command"}},
			"no --":           {[]string{"exec", box, "true"}, []string{"exec needs a box name, then -- and the command"}},
			"exec -t":         {[]string{"exec", "-t", box, "--", "true"}, []string{"exec -t needs a terminal"}},
			"logs service":    {[]string{"logs", box, "db"}, []string{`logs: "db" is not a service of a box`}},
			"doctor unknown":  {[]string{"doctor", "it-nope"}, []string{`no box "it-nope"`}},
		} {
			r := boxes(t, dir, tc.args...)
			if r.code != 1 {
				t.Errorf("%s: exit %d, want 1", name, r.code)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("%s: stderr lacks %q:\n%s", name, w, r.stderr)
				}
			}
		}
	})

	t.Run("open", func(t *testing.T) {
		// The browser is a script that records the address it is given and
		// fetches it, as a browser would, keeping where it was redirected.
		tmp := t.TempDir()
		got, redirect := filepath.Join(tmp, "url"), filepath.Join(tmp, "redirect")
		browser := filepath.Join(tmp, "browser")
		writeFile(t, browser, "#!/bin/sh\nprintf '%s' \"$1\" > "+got+"\ncurl -s -o /dev/null -w '%{redirect_url}' \"$1\" > "+redirect+"\n")
		if err := os.Chmod(browser, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv("BOXES_BROWSER", browser)
		r := boxes(t, dir, "open", box)
		token := strings.TrimPrefix(strings.TrimSpace(readFile(t, filepath.Join(dir, ".boxes", "secrets", box+".env"))), "EXECUTOR_TOKEN=")
		if r.code != 0 || strings.Contains(r.stdout+r.stderr, token) || !strings.Contains(r.stdout, "opened the dashboard of "+box) {
			t.Fatalf("open: %+v", r)
		}
		if u := readFile(t, got); !strings.HasPrefix(u, "http://127.0.0.1:") || strings.Contains(u, token) {
			t.Fatalf("the browser's command line was %q: it must not hold the token", u)
		}
		u := readFile(t, redirect)
		if !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.HasSuffix(u, "/?token="+token) {
			t.Fatalf("the one-time address redirected to %q", u)
		}
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("dashboard answered %s", resp.Status)
		}
		t.Setenv("BOXES_BROWSER", "/nonexistent/browser")
		if r := boxes(t, dir, "open", box); r.code != 1 || !strings.Contains(r.stderr, "/nonexistent/browser") || strings.Contains(r.stderr, token) {
			t.Errorf("open with a missing browser: %+v", r)
		}
	})

	t.Run("exec under change", func(t *testing.T) { execUnderChange(t, dir, box) })

	t.Run("doctor", func(t *testing.T) {
		r := boxes(t, dir, "doctor", box)
		if r.code != 0 || !strings.Contains(r.stdout, "box "+box+" is healthy") {
			t.Fatalf("doctor of a healthy box: %+v", r)
		}
		for _, line := range []string{"ok    host  agent publishes nothing", "ok    host  mcp with token", "ok    host  mcp without token",
			"ok    host  executor image", "ok    box   mcp handshake"} {
			if !strings.Contains(r.stdout, line) {
				t.Errorf("doctor lacks %q:\n%s", line, r.stdout)
			}
		}
		rep := doctorJSON(t, dir, box, 0)
		if !rep.OK || len(rep.Checks) < 10 {
			t.Errorf("doctor --json: %+v", rep)
		}

		// A wrong token on the host: the host handshake fails, the box's own passes.
		secret := filepath.Join(dir, ".boxes", "secrets", box+".env")
		good := readFile(t, secret)
		writeFile(t, secret, "EXECUTOR_TOKEN="+strings.Repeat("0", 64)+"\n")
		rep = doctorJSON(t, dir, box, 1)
		if c := find(rep, "host", "mcp with token"); c.OK || !strings.Contains(c.Detail, "HTTP 401") {
			t.Errorf("wrong token: %+v", c)
		}
		if c := find(rep, "box", "mcp handshake"); !c.OK {
			t.Errorf("wrong host token failed the box's handshake: %+v", c)
		}
		writeFile(t, secret, good)

		// Executor stopped: its container and the box's handshake fail.
		dockerOut(t, "stop", "-t", "1", "hbl-"+box+"-executor-1")
		rep = doctorJSON(t, dir, box, 1)
		if c := find(rep, "host", "executor container"); c.OK || !strings.HasPrefix(c.Detail, "exited") {
			t.Errorf("executor stopped: %+v", c)
		}
		if c := find(rep, "box", "mcp handshake"); c.OK {
			t.Errorf("executor stopped, yet the box's handshake passed: %+v", c)
		}
		if r := boxes(t, dir, "doctor", box); r.code != 1 || !strings.Contains(r.stdout, "FAIL  host  executor container") || !strings.Contains(r.stdout, "has problems") {
			t.Errorf("doctor text with the executor stopped: %+v", r)
		}
	})
}

// execUnderChange: an exec whose box an apply recreates says so instead of
// a bare exit 137, and one started while another boxes process is changing
// the box names that process instead of hinting boxes start. Real engine:
// what kills the command is the engine removing its container.
func execUnderChange(t *testing.T, dir, box string) {
	done := make(chan run, 1)
	go func() { done <- boxes(t, dir, "exec", box, "--", "sleep", "120") }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := osexec.Command("docker", "exec", "hbl-"+box+"-agent-1", "pgrep", "-x", "sleep").Output()
		if len(out) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the exec's sleep never started")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r := boxes(t, dir, "apply", "--auto-approve", "--target", box, "--replace", box); r.code != 0 {
		t.Fatalf("apply --replace: %+v", r)
	}
	select {
	case r := <-done:
		if r.code != 137 || !strings.Contains(r.stderr, "boxes: error: box "+box+"'s agent container was stopped or replaced while the command ran, and the command ended with it (exit 137)") {
			t.Errorf("exec under a recreate: %+v", r)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("exec still running after its container was replaced")
	}

	// Another process holds the box's lock, as apply does while it
	// recreates the box, and the agent is down meanwhile.
	holder := osexec.Command("sleep", "60")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	host, _ := os.Hostname()
	line := fmt.Sprintf("boxes apply (pid %d on %s, since 2026-12-03T10:00:00Z)\n", holder.Process.Pid, host)
	writeFile(t, filepath.Join(dir, ".boxes", "locks", box+".lock"), line)
	t.Cleanup(func() { _ = os.Remove(filepath.Join(dir, ".boxes", "locks", box+".lock")) })
	dockerOut(t, "stop", "hbl-"+box+"-agent-1")
	defer dockerOut(t, "start", "hbl-"+box+"-agent-1")
	r := boxes(t, dir, "exec", box, "--", "true")
	if r.code != 1 || !strings.Contains(r.stderr, "boxes: hint: boxes apply (pid "+strconv.Itoa(holder.Process.Pid)) || strings.Contains(r.stderr, "boxes start") {
		t.Errorf("exec while apply holds the box: %+v", r)
	}
}

func doctorJSON(t *testing.T, dir, box string, code int) doctor.Report {
	t.Helper()
	r := boxes(t, dir, "doctor", "--json", box)
	var rep doctor.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != code {
		t.Fatalf("doctor --json: exit %d (want %d), %v\n%s%s", r.code, code, err, r.stdout, r.stderr)
	}
	return rep
}

func find(rep doctor.Report, where, name string) hb.Check {
	for _, c := range rep.Checks {
		if c.Where == where && c.Name == name {
			return c
		}
	}
	return hb.Check{Where: where, Name: name, Detail: "not reported"}
}
