package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/mcp"
	"github.com/hermes-box/boxes/statedir"
)

type hbDoctor struct{ out string }

func (h hbDoctor) Run(_ context.Context, _, _ string, _ []string, stdout, _ io.Writer) (int, error) {
	fmt.Fprint(stdout, h.out)
	return 0, nil
}

func box(agentState string, agentPorts ...engine.Port) Box {
	return Box{
		Name:  "alpha",
		Image: "sha256:1111111111111111",
		Bind:  "127.0.0.1",
		Token: "t0k",
		Resources: engine.Resources{Containers: []engine.Container{
			{ID: "a", Name: "hbl-alpha-agent-1", Service: "agent", State: engine.State(agentState), Image: "sha256:1111111111111111", Ports: agentPorts},
			{ID: "x", Name: "hbl-alpha-executor-1", Service: "executor", State: "running", Image: "sha256:2222222222222222",
				Ports: []engine.Port{{HostIP: "127.0.0.1", HostPort: 40000, ContainerPort: 4788}}},
			{ID: "g", Name: "hbl-alpha-gate-1", Service: "gate", State: "running", Image: "sha256:1111111111111111"},
		}},
	}
}

func gate(_ context.Context, _ string, token string) error {
	if token == "" {
		return &mcp.StatusError{Code: 401}
	}
	return nil
}

func lines(r *Report) string {
	var b strings.Builder
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "%s %s %s: %s\n", c.Severity, c.Where, c.Name, c.Detail)
	}
	return b.String()
}

func TestCheckHealthyBoxButStaleExecutor(t *testing.T) {
	rep := Check(context.Background(), box("running"), Probes{Runner: hbDoctor{`{"ok":true,"checks":[{"name":"layout","ok":true,"severity":"ok","detail":"fine"}]}`}, Initialize: gate})
	want := `ok host agent container: running, hbl-alpha-agent-1
ok host agent image: the lock's 111111111111
ok host executor container: running, hbl-alpha-executor-1
error host executor image: runs 222222222222, boxes.lock has 111111111111 (boxes apply recreates it)
ok host gate container: running, hbl-alpha-gate-1
ok host gate image: the lock's 111111111111
ok host agent publishes nothing: no port
ok host executor port: published on 127.0.0.1:40000
ok host mcp with token: initialize at http://127.0.0.1:40000/mcp answered with a protocol version
ok host mcp without token: refused with 401
ok box layout: fine
`
	if got := lines(rep); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if rep.OK {
		t.Error("a stale executor image is not OK")
	}
}

func TestCheckFindsAPublishingAgentAndAnOpenExecutor(t *testing.T) {
	b := box("exited", engine.Port{HostIP: "0.0.0.0", HostPort: 22, ContainerPort: 22})
	b.Resources.Containers[1].Image = b.Image
	rep := Check(context.Background(), b, Probes{Initialize: func(context.Context, string, string) error { return nil }})
	got := lines(rep)
	for _, want := range []string{
		"error host agent container: exited (boxes start alpha)",
		"error host agent publishes nothing: publishes 0.0.0.0:22->22",
		"error host mcp without token: answered without a token",
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, " box ") || rep.OK {
		t.Errorf("a stopped agent is not probed inside, and the report fails:\n%s", got)
	}
}

func TestCheckReportsExposedSecrets(t *testing.T) {
	b := box("running")
	b.Image = "sha256:2222222222222222"
	b.Exposed = []statedir.Exposure{{Path: ".boxes/secrets/alpha.env", Mode: 0o644, Want: 0o600}}
	rep := Check(context.Background(), b, Probes{Runner: hbDoctor{`{"ok":true,"checks":[]}`}, Initialize: gate})
	if !strings.Contains(lines(rep), "error host secrets: .boxes/secrets/alpha.env is 0644, want 0600 (boxes apply restores it)") || rep.OK {
		t.Errorf("exposed token not an error:\n%s", lines(rep))
	}
}

// A box whose restore was cut short is never healthy, however well it runs.
func TestCheckReportsAnIncompleteRestore(t *testing.T) {
	b := box("running")
	b.Image = "sha256:2222222222222222"
	b.Restoring = &statedir.Restoring{Box: "alpha", Archive: "backups/alpha-20260101-000000.tar.zst.age"}
	rep := Check(context.Background(), b, Probes{Runner: hbDoctor{`{"ok":true,"checks":[]}`}, Initialize: gate})
	if !strings.Contains(lines(rep), "error host restore: restore incomplete: the box holds part of backups/alpha-20260101-000000.tar.zst.age") || rep.OK {
		t.Errorf("an incomplete restore is not an error:\n%s", lines(rep))
	}
}

// A restore record that cannot be read is a problem, never no record.
func TestCheckReportsABadRestoreRecord(t *testing.T) {
	b := box("running")
	b.Image = "sha256:2222222222222222"
	b.RestoringErr = errors.New(".boxes/restores/alpha.json is not a restore record")
	rep := Check(context.Background(), b, Probes{Runner: hbDoctor{`{"ok":true,"checks":[]}`}, Initialize: gate})
	if !strings.Contains(lines(rep), "error host restore: .boxes/restores/alpha.json is not a restore record") || rep.OK {
		t.Errorf("a bad restore record is not an error:\n%s", lines(rep))
	}
}

// A box boxes.yaml declares stopped is healthy stopped: its containers
// exited are as declared, and the checks inside it are said to be skipped.
// The same box declared running is a problem.
func TestCheckStoppedAsDeclared(t *testing.T) {
	b := box("exited")
	b.Image = "sha256:2222222222222222"
	b.Resources.Containers[0].Image = b.Image
	b.Resources.Containers[1].State = "exited"
	b.Resources.Containers[2].Image, b.Resources.Containers[2].State = b.Image, "exited"
	b.Stopped = true
	rep := Check(context.Background(), b, Probes{Runner: hbDoctor{`{"ok":false}`}, Initialize: gate})
	want := `ok host agent container: stopped, as boxes.yaml declares, hbl-alpha-agent-1
ok host agent image: the lock's 222222222222
ok host executor container: stopped, as boxes.yaml declares, hbl-alpha-executor-1
ok host executor image: the lock's 222222222222
ok host gate container: stopped, as boxes.yaml declares, hbl-alpha-gate-1
ok host gate image: the lock's 222222222222
ok host agent publishes nothing: no port
warn box checks inside the box: not run: the box is stopped, as declared (boxes start alpha, then boxes doctor alpha, runs them)
`
	if got := lines(rep); got != want || !rep.OK {
		t.Errorf("OK %v, got\n%s\nwant\n%s", rep.OK, got, want)
	}
	b.Stopped = false
	if rep := Check(context.Background(), b, Probes{Initialize: gate}); rep.OK || !strings.Contains(lines(rep), "error host agent container: exited (boxes start alpha)") {
		t.Errorf("a box declared running, stopped:\n%s", lines(rep))
	}
	b.Stopped = true
	b.Resources.Containers[0].State = "restarting"
	if rep := Check(context.Background(), b, Probes{Initialize: gate}); rep.OK {
		t.Errorf("a box declared stopped whose agent restarts is OK:\n%s", lines(rep))
	}
}

// Doctor says which runtime the agent runs under (a line of its own, and
// the report's runtime field), and fails when it is not the one boxes.yaml
// declares.
func TestCheckReportsTheRuntime(t *testing.T) {
	runsUnder := func(name string, err error) func(context.Context, string) (string, error) {
		return func(_ context.Context, id string) (string, error) {
			if id != "a" {
				t.Errorf("runtime read of container %q, want the agent's", id)
			}
			return name, err
		}
	}
	b := box("running")
	b.Image = "sha256:2222222222222222"
	b.Resources.Containers[0].Image = b.Image
	b.Resources.Containers[2].Image = b.Image
	ok := hbDoctor{`{"ok":true,"checks":[{"name":"layout","ok":true,"severity":"ok","detail":"fine"}]}`}
	for _, c := range []struct {
		name     string
		declared string
		read     func(context.Context, string) (string, error)
		want     string
		runtime  string
		healthy  bool
	}{
		{"gVisor, as declared", "runsc", runsUnder("runsc", nil), "ok host agent runtime: runsc (gVisor), as boxes.yaml says", "runsc", true},
		{"the engine's default", "", runsUnder("runc", nil), "ok host agent runtime: runc, the engine's default (boxes.yaml names no runtime:)", "runc", true},
		{"an edit not applied yet", "runsc", runsUnder("runc", nil), "error host agent runtime: runs under runc, boxes.yaml says runtime: runsc (boxes apply recreates it)", "runc", false},
		{"not readable", "runsc", runsUnder("", errors.New("connection reset")), "warn host agent runtime: not read: connection reset", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b.Runtime = c.declared
			rep := Check(context.Background(), b, Probes{Runner: ok, Initialize: gate, Runtime: c.read})
			if !strings.Contains(lines(rep), c.want+"\n") || rep.OK != c.healthy || rep.Runtime != c.runtime {
				t.Errorf("OK %v, runtime %q, want %v and %q with %q in\n%s", rep.OK, rep.Runtime, c.healthy, c.runtime, c.want, lines(rep))
			}
			var out strings.Builder
			rep.WriteText(&out)
			if !strings.Contains(out.String(), "agent runtime") {
				t.Errorf("text report without the runtime:\n%s", out.String())
			}
			js, _ := json.Marshal(rep)
			if c.runtime != "" && !strings.Contains(string(js), `"runtime":"`+c.runtime+`"`) {
				t.Errorf("JSON report without the runtime: %s", js)
			}
		})
	}
	if rep := Check(context.Background(), b, Probes{Runner: ok, Initialize: gate}); strings.Contains(lines(rep), "runtime") || rep.Runtime != "" {
		t.Errorf("a runtime reported with no way to read it:\n%s", lines(rep))
	}
}
