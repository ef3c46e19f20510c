package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-box/boxes/internal/testhost"
)

// TestIntegrationEngineGoneMidApply: a second engine is stopped while an
// apply creates boxes on it and on the local engine, once while compose
// creates the remote box and once while apply waits for its executor. The
// local boxes finish, the apply fails naming the host, and once the engine
// is started again the next apply converges. Real engine: a second dockerd
// is stopped under compose's create and under the wait for the executor,
// over ssh, and started again with what it held.
func TestIntegrationEngineGoneMidApply(t *testing.T) {
	image, _ := startIntegration(t)
	local := []string{"it-h11a-l1", "it-h11a-l2", "it-h11a-l3"}
	removeBoxes(local...)
	t.Cleanup(func() { removeBoxes(local...) })
	remote := testhost.Start(t, testhost.Options{SSH: true, Images: []string{image}})
	t.Setenv("PATH", remote.SSHPath+string(os.PathListSeparator)+os.Getenv("PATH"))
	bin := buildBoxes(t)
	dir := t.TempDir()
	declared := ""
	write := func(more string) {
		declared += more
		writeFile(t, filepath.Join(dir, "boxes.yaml"), fmt.Sprintf("version: 1\nhosts:\n  far: {docker: %q}\nboxes:\n%s", remote.SSH, declared))
	}
	write("")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}

	for _, tc := range []struct {
		name, far, step string
		local           []string
	}{
		{"while compose creates the box", "it-h11a-far1", "creating", local[:2]},
		{"while apply waits for its executor", "it-h11a-far2", "waiting for executor", local[2:]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			more := fmt.Sprintf("  %s: {host: far, executor: {bind: 0.0.0.0}}\n", tc.far)
			for _, b := range tc.local {
				more += "  " + b + ": {}\n"
			}
			write(more)
			engineGoneMidApply(t, bin, dir, remote, tc.far, tc.step, tc.local)
		})
	}
	if got := boxesOn(t, remote); !got["it-h11a-far1"] || !got["it-h11a-far2"] || len(got) != 2 {
		t.Errorf("boxes on the remote engine: %v", got)
	}
}

// engineGoneMidApply runs apply, stops the remote engine when box far's
// progress shows step, and checks what the design promises.
func engineGoneMidApply(t *testing.T, bin, dir string, remote *testhost.Engine, far, step string, local []string) {
	cmd := exec.Command(bin, "-f", filepath.Join(dir, "boxes.yaml"), "apply", "--auto-approve")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var progress []string
	var stopped, gone time.Time
	stopDone := make(chan struct{})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		progress = append(progress, line)
		if stopped.IsZero() && strings.Contains(line, far+": "+step) {
			stopped = time.Now()
			go func() {
				remote.Stop()
				gone = time.Now()
				close(stopDone)
			}()
		}
	}
	err = cmd.Wait()
	exited := time.Now()
	if stopped.IsZero() {
		t.Fatalf("apply never showed %s: %s: %v\n%s\n%s", far, step, err, strings.Join(progress, "\n"), stderr.String())
	}
	<-stopDone
	t.Logf("the engine was told to stop %s into the apply and was down %s later; apply ended %s after the stop began (%v)",
		stopped.Sub(began).Round(time.Millisecond), gone.Sub(stopped).Round(time.Millisecond), exited.Sub(stopped).Round(time.Millisecond), err)
	t.Logf("progress:\n%s\nstderr:\n%s", strings.Join(progress, "\n"), stderr.String())
	if cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("apply with the engine gone: exit %d, want 1", cmd.ProcessState.ExitCode())
	}
	if msg := stderr.String(); !strings.Contains(msg, far+": host far (") && !strings.Contains(msg, far+" (host far): ") {
		t.Errorf("the error does not name the box and its host:\n%s", msg)
	}
	args := []string{"plan", "--detailed-exitcode"}
	for _, b := range local {
		if strings.Contains(stderr.String(), b) {
			t.Errorf("local box %s failed:\n%s", b, stderr.String())
		}
		if state := dockerOut(t, "inspect", "-f", "{{.State.Status}}", "hbl-"+b+"-executor-1"); state != "running" {
			t.Errorf("local box %s: executor %s", b, state)
		}
		args = append(args, "--target", b)
	}
	// With the engine still down: a plan of the local boxes has nothing
	// to do; a plan of every box fails naming the host.
	if r := boxes(t, dir, args...); r.code != 0 {
		t.Errorf("plan of the local boxes while the engine is down: %+v", r)
	}
	if r := boxes(t, dir, "plan"); r.code != 1 || !strings.Contains(r.stderr, "host far") {
		t.Errorf("plan while the engine is down: %+v", r)
	}

	if err := remote.Restart(); err != nil {
		t.Fatal(err)
	}
	r := boxes(t, dir, "plan", "--detailed-exitcode")
	if r.code != 0 && r.code != 2 {
		t.Fatalf("plan after the engine is back: %+v", r)
	}
	if i := strings.LastIndex(r.stdout, "Plan:"); i >= 0 {
		t.Logf("left once the engine is back: %s", strings.TrimSpace(r.stdout[i:]))
	} else {
		t.Logf("left once the engine is back: %s", strings.TrimSpace(r.stdout))
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply after the engine is back: %+v", r)
	}
	if r := boxes(t, dir, "plan", "--detailed-exitcode"); r.code != 0 || !strings.Contains(r.stdout, "No changes.") {
		t.Fatalf("plan after converging: %+v", r)
	}
}
