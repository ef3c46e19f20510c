package cli

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-box/boxes/archive"
)

// TestIntegrationConcurrentCommands: while an apply recreates a box, the
// other commands that change the box (save, rm, stop, a second apply) fail
// at once naming the apply that holds the lock, exec keeps working, and
// nothing in /data is lost, what exec wrote meanwhile included.
//
// The apply is frozen (SIGSTOP) once the box's new containers run and it
// waits for the executor, so that the other commands always meet it in the
// middle of its work, holding its locks; it is resumed afterwards. Real
// engine: exec reads and writes a real /data in the new containers while
// the apply is frozen, and what it wrote must survive the apply.
func TestIntegrationConcurrentCommands(t *testing.T) {
	image, image2 := startIntegration(t)
	const box = "it-h11a-cc"
	removeBoxes(box)
	t.Cleanup(func() { removeBoxes(box) })
	bin := buildBoxes(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "boxes.yaml")
	writeFile(t, config, fmt.Sprintf("version: 1\nboxes:\n  %s: {}\n", box))
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock: %+v", r)
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	agent := "hbl-" + box + "-agent-1"
	dockerOut(t, "exec", agent, "sh", "-c", "echo kept > /data/marker")
	if r := boxes(t, dir, "lock", "image", image2); r.code != 0 {
		t.Fatalf("lock: %+v", r)
	}
	t.Setenv("BOXES_PASSPHRASE", "correct horse battery staple")

	apply := exec.Command(bin, "-f", config, "apply", "--auto-approve")
	var applyErr bytes.Buffer
	apply.Stderr = &applyErr
	stdout, err := apply.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := apply.Start(); err != nil {
		t.Fatal(err)
	}
	pid := apply.Process.Pid
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGCONT)
		_ = apply.Process.Kill()
	})
	sc := bufio.NewScanner(stdout)
	var progress []string
	for sc.Scan() {
		progress = append(progress, sc.Text())
		if strings.Contains(sc.Text(), box+": waiting for executor") {
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if !strings.Contains(strings.Join(progress, "\n"), "waiting for executor") {
		t.Fatalf("apply never waited for the executor:\n%s\n%s", strings.Join(progress, "\n"), applyErr.String())
	}
	rest := make(chan string)
	go func() {
		out, _ := io.ReadAll(stdout)
		rest <- string(out)
	}()

	// run runs bin with args and a bound: a command that waits for a lock
	// instead of failing would hang here.
	run := func(args ...string) (int, string, time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"-f", config}, args...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		began := time.Now()
		err := cmd.Run()
		took := time.Since(began)
		if ctx.Err() != nil {
			t.Fatalf("boxes %s did not return within 60 s: %s", strings.Join(args, " "), out.String())
		}
		code := 0
		if err != nil {
			code = cmd.ProcessState.ExitCode()
		}
		return code, out.String(), took
	}
	boxLock := fmt.Sprintf("%s is held by boxes apply (pid %d on ", filepath.Join(dir, ".boxes", "locks", box+".lock"), pid)
	applyLock := fmt.Sprintf("%s is held by boxes apply (pid %d on ", filepath.Join(dir, ".boxes", "apply.lock"), pid)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"save", box, "-o", filepath.Join(dir, "during"+archive.Ext)}, boxLock},
		{[]string{"rm", box, "--confirm", box}, boxLock},
		{[]string{"stop", box}, boxLock},
		{[]string{"apply", "--auto-approve"}, applyLock},
	} {
		code, out, took := run(tc.args...)
		t.Logf("boxes %s: exit %d after %s: %s", tc.args[0], code, took.Round(time.Millisecond), strings.TrimSpace(out))
		if code != 1 || !strings.Contains(out, tc.want) {
			t.Errorf("boxes %s while apply holds the box: exit %d, want 1 and %q in:\n%s", strings.Join(tc.args, " "), code, tc.want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "during"+archive.Ext)); err == nil {
		t.Error("save wrote an archive while apply held the box")
	}
	code, out, took := run("exec", box, "--", "cat", "/data/marker")
	t.Logf("boxes exec while apply holds the box: exit %d after %s", code, took.Round(time.Millisecond))
	// Its last line: on a busy machine the box may still be in hb init,
	// which exec waits for and says so first.
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || lines[len(lines)-1] != "kept" {
		t.Errorf("exec while apply holds the box: exit %d: %s", code, out)
	}
	if code, out, _ := run("exec", box, "--", "sh", "-c", `echo written-during > "$HOME/during"`); code != 0 {
		t.Errorf("exec writing while apply holds the box: exit %d: %s", code, out)
	}

	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := apply.Wait(); err != nil {
		t.Fatalf("the apply that held the box: %v\n%s\n%s", err, <-rest, applyErr.String())
	}
	<-rest
	if r := boxes(t, dir, "plan", "--detailed-exitcode"); r.code != 0 {
		t.Fatalf("plan after the apply: %+v", r)
	}
	if got := dockerOut(t, "exec", agent, "cat", "/data/marker"); got != "kept" {
		t.Errorf("marker after the apply: %q", got)
	}
	if got := dockerOut(t, "exec", agent, "cat", "/data/home/agent/during"); got != "written-during" {
		t.Errorf("what exec wrote during the apply: %q", got)
	}
	// The locks are free again: save now works.
	if code, out, _ := run("save", box, "-o", filepath.Join(dir, "after"+archive.Ext)); code != 0 {
		t.Errorf("save after the apply: exit %d: %s", code, out)
	}
}
