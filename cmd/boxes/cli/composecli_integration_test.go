package cli

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestIntegrationComposeCLI: the docker compose command-line tool works on a
// box boxes made (ls, ps, logs, exec), and what a user does to it with that
// tool (restart, stop) shows up in the next plan as the drift it is, never as
// a recreate or a delete. Real engine: the docker compose tool itself reads
// and changes what boxes made, which works only if it is a real compose
// project on the engine.
func TestIntegrationComposeCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	if out, err := exec.Command("docker", "compose", "version").CombinedOutput(); err != nil {
		t.Skipf("the docker compose CLI is not installed (.ci/run builds it): %s", out)
	}
	image := testImage(t, "BOXES_TEST_IMAGE", "hermes-box-lite:test")
	const box, project = "it-compose", "hbl-it-compose"
	removeBoxes(box)
	t.Cleanup(func() { removeBoxes(box) })

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nboxes:\n  "+box+": {}\n")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	compose := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("docker", append([]string{"compose"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("docker compose %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	planIs := func(when string, code int, want string) {
		t.Helper()
		r := boxes(t, dir, "plan", "--detailed-exitcode")
		if r.code != code || !strings.Contains(r.stdout, want) {
			t.Fatalf("plan %s: exit %d, want %d with %q:\n%s%s", when, r.code, code, want, r.stdout, r.stderr)
		}
		for _, worse := range []string{"must be replaced", "will be deleted", "will be created"} {
			if strings.Contains(r.stdout, worse) {
				t.Errorf("plan %s says %q:\n%s", when, worse, r.stdout)
			}
		}
	}

	t.Run("ls", func(t *testing.T) {
		var projects []struct{ Name, Status string }
		if err := json.Unmarshal([]byte(compose("ls", "--format", "json", "--filter", "name="+project)), &projects); err != nil {
			t.Fatal(err)
		}
		if len(projects) != 1 || projects[0].Name != project || projects[0].Status != "running(3)" {
			t.Errorf("docker compose ls: %+v, want %s running(3): agent, executor, gate", projects, project)
		}
	})
	t.Run("ps", func(t *testing.T) {
		out := compose("-p", project, "ps", "--format", "{{.Service}} {{.State}}")
		for _, want := range []string{"agent running", "executor running"} {
			if !strings.Contains(out, want) {
				t.Errorf("docker compose -p %s ps: %q lacks %q", project, out, want)
			}
		}
	})
	t.Run("exec", func(t *testing.T) {
		out := compose("-p", project, "exec", "-T", "agent", "sh", "-c", `echo "$BOX_NAME $HOME"`)
		if strings.TrimSpace(out) != box+" /data/home/agent" {
			t.Errorf("docker compose exec agent: %q", out)
		}
	})
	t.Run("logs", func(t *testing.T) {
		var out string
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
			if out = compose("-p", project, "logs", "--no-color", "agent"); strings.Contains(out, "agent-1") {
				return
			}
		}
		t.Errorf("docker compose logs agent shows no line of the agent container: %q", out)
	})

	compose("-p", project, "restart")
	planIs("after docker compose restart", 0, "No changes.")

	compose("-p", project, "stop")
	planIs("after docker compose stop", 2, "state: stopped → running")
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply after docker compose stop: %+v", r)
	}
	planIs("after apply", 0, "No changes.")

	compose("-p", project, "stop", "executor")
	planIs("after docker compose stop executor", 2, "will be started")
}
