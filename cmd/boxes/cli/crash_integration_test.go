package cli

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// buildBoxes is the real binary, so a test can SIGKILL it mid-apply: the
// one BOXES_TEST_BOXES names (scripts/test.sh builds it once for every
// part), else compiled once for this test process (linking it takes
// seconds of processor time) into builtDir, which TestMain removes.
func buildBoxes(t *testing.T) string {
	t.Helper()
	bin, err := boxesBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// builtDir is the directory boxesBinary built into ("" when it built
// nothing); TestMain removes it once every test is done.
var builtDir string

var boxesBinary = sync.OnceValues(func() (string, error) {
	if bin := os.Getenv("BOXES_TEST_BOXES"); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("BOXES_TEST_BOXES: %w", err)
		}
		return bin, nil
	}
	dir, err := os.MkdirTemp("", "boxes-test-bin-")
	if err != nil {
		return "", err
	}
	builtDir = dir
	bin := filepath.Join(dir, "boxes")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/hermes-box/boxes/cmd/boxes").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// killAt runs apply and SIGKILLs it when the nth progress line containing step appears.
func killAt(t *testing.T, bin, dir, step string, nth int) {
	t.Helper()
	cmd := exec.Command(bin, "-f", filepath.Join(dir, "boxes.yaml"), "apply", "--auto-approve", "--parallelism", "1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	seen := 0
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.Contains(sc.Text(), step) {
			seen++
			if seen == nth {
				_ = cmd.Process.Kill()
				break
			}
		}
	}
	_ = cmd.Wait()
	if seen < nth {
		t.Fatalf("apply finished before the %dth %q", nth, step)
	}
}

// TestIntegrationCrashSafety: apply SIGKILLed at set steps of a create, a
// recreate and an egress change leaves a plan with work to do, and the next
// apply converges, /data kept and no agent remade for the gates. Real
// engine: the kills land inside compose's create, replace and start.
func TestIntegrationCrashSafety(t *testing.T) {
	image, image2 := startWithItBoxes(t)
	bin := buildBoxes(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nboxes:\n  it-alpha: {}\n  it-beta: {}\n  it-gamma: {}\n")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock: %+v", r)
	}

	converge := func(t *testing.T) {
		t.Helper()
		r := boxes(t, dir, "plan", "--detailed-exitcode")
		if r.code != 2 {
			t.Fatalf("plan after the kill shows no remaining work: %+v", r)
		}
		t.Logf("plan after kill: %s", r.stdout[strings.LastIndex(r.stdout, "Plan:"):])
		if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
			t.Fatalf("apply after the kill: %+v", r)
		}
		if r := boxes(t, dir, "plan", "--detailed-exitcode"); r.code != 0 {
			t.Fatalf("plan after converging: %+v", r)
		}
	}

	for _, point := range []struct {
		step string
		nth  int
	}{{"creating", 1}, {"starting", 1}, {"creating", 3}} {
		t.Run("create killed at "+point.step, func(t *testing.T) {
			removeTestBoxes()
			_ = os.RemoveAll(filepath.Join(dir, ".boxes"))
			killAt(t, bin, dir, point.step, point.nth)
			converge(t)
		})
	}

	for _, b := range []string{"it-alpha", "it-beta", "it-gamma"} {
		dockerOut(t, "exec", "hbl-"+b+"-agent-1", "sh", "-c", "echo kept > /data/marker")
	}
	if r := boxes(t, dir, "lock", "image", image2); r.code != 0 {
		t.Fatalf("lock: %+v", r)
	}
	t.Run("recreate killed while replacing", func(t *testing.T) {
		killAt(t, bin, dir, "replacing", 2)
		time.Sleep(200 * time.Millisecond)
		converge(t)
		for _, b := range []string{"it-alpha", "it-beta", "it-gamma"} {
			if got := dockerOut(t, "exec", "hbl-"+b+"-agent-1", "cat", "/data/marker"); got != "kept" {
				t.Errorf("%s lost its data: %q", b, got)
			}
			if n := len(strings.Fields(dockerOut(t, "ps", "-aq", "--filter", "label=boxes.box="+b))); n != 3 {
				t.Errorf("%s has %d containers, want 3 (agent, executor, gate)", b, n)
			}
			if n := len(strings.Fields(dockerOut(t, "volume", "ls", "-q", "--filter", "label=boxes.box="+b))); n != 2 {
				t.Errorf("%s has %d volumes, want 2", b, n)
			}
		}
	})

	// An egress change remakes the gates alone: killed between two of them,
	// the next apply finishes the rest, and no agent was remade.
	t.Run("egress change killed while replacing the gates", func(t *testing.T) {
		agents := map[string]string{}
		for _, b := range []string{"it-alpha", "it-beta", "it-gamma"} {
			agents[b] = dockerOut(t, "inspect", "-f", "{{.Id}}", "hbl-"+b+"-agent-1")
		}
		writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\ndefaults:\n  egress: [registry.npmjs.org]\nboxes:\n  it-alpha: {}\n  it-beta: {}\n  it-gamma: {}\n")
		killAt(t, bin, dir, "replacing the gate", 2)
		time.Sleep(200 * time.Millisecond)
		converge(t)
		for b, id := range agents {
			if got := dockerOut(t, "inspect", "-f", "{{.Id}}", "hbl-"+b+"-agent-1"); got != id {
				t.Errorf("%s's agent was remade for an egress change", b)
			}
			if got := dockerOut(t, "exec", "hbl-"+b+"-agent-1", "cat", "/data/marker"); got != "kept" {
				t.Errorf("%s lost its data: %q", b, got)
			}
		}
	})
}
