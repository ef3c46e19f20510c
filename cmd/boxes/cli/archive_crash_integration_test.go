package cli

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/compose"
)

// signalAt runs the boxes binary with args and sends it sig when the nth
// line of its output (stdout or stderr) containing step appears; it returns
// once the process has ended. It fails the test if the step never came.
func signalAt(t *testing.T, bin, dir string, sig syscall.Signal, step string, nth int, args ...string) (printed string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-f", filepath.Join(dir, "boxes.yaml")}, args...)...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); pw.Close() }()
	seen := 0
	var out strings.Builder
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), step) {
			if seen++; seen == nth {
				_ = cmd.Process.Signal(sig)
				break
			}
		}
	}
	_, _ = io.Copy(&out, pr)
	if seen < nth {
		t.Fatalf("%v finished before %q:\n%s", args, step, out.String())
	}
	return out.String()
}

// sha256In is the SHA-256 of a file in a box's agent container.
func sha256In(t *testing.T, box, path string) string {
	t.Helper()
	return strings.Fields(dockerOut(t, "exec", "-u", "0", compose.ContainerName(box, compose.AgentService), "sha256sum", path))[0]
}

// thawed fails the test unless box's agent is running, not paused, without
// hb's quiesce marker, and none of its processes is stopped.
func thawed(t *testing.T, box, when string) {
	t.Helper()
	agent := compose.ContainerName(box, compose.AgentService)
	if st := dockerOut(t, "inspect", "-f", "{{.State.Status}} {{.State.Paused}}", agent); st != "running false" {
		t.Errorf("%s: agent is %s", when, st)
		return
	}
	out := dockerOut(t, "exec", "-u", "0", agent, "sh", "-c", "test -e /data/.hb/quiesced && echo quiesced; ps -eo stat=,comm= | grep '^T' || true")
	if out != "" {
		t.Errorf("%s: the box is still frozen: %s", when, out)
	}
}

// noPartials fails the test if backups/ holds a save's hidden partial file.
func noPartials(t *testing.T, dir, when string) {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Join(dir, "backups"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("%s: backups/ holds %s", when, e.Name())
		}
	}
}

// Save, load and seeding cut short by signals at several points: nothing is
// left frozen, partial or half-restored once the next command has run, and
// plan and doctor say what is left until then. A database written in a
// tight loop during the save is restored intact. Real engine: the signals
// fall while hb freezes real processes, and the files, owners and modes
// restored are read from real volumes.
func TestIntegrationArchiveCrashes(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image := testImage(t, "BOXES_TEST_IMAGE", "hermes-box-lite:test")
	const src, dst, seeded = "it-h10-src", "it-h10-dst", "it-h10-seed"
	removeBoxes(src, dst, seeded)
	t.Cleanup(func() { removeBoxes(src, dst, seeded) })
	bin := buildBoxes(t)
	dir := t.TempDir()

	// An age key: no passphrase to ask for, no scrypt to wait on.
	key, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "key.txt")
	writeFile(t, keyFile, key.String()+"\n")
	t.Setenv(backup.EnvIdentity, keyFile)
	yaml := "version: 1\narchive:\n  recipients: [" + key.Recipient().String() + "]\nboxes:\n  " + src + ": {}\n  " + dst + ": {}\n"
	writeFile(t, filepath.Join(dir, "boxes.yaml"), yaml)
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	if r := boxes(t, dir, "apply", "--auto-approve", "--target", src); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	agent := compose.ContainerName(src, compose.AgentService)
	dockerOut(t, "exec", "-u", "0", agent, "sh", "-c", "for i in $(seq 300); do hb health agent >/dev/null 2>&1 && break; sleep 0.2; done")
	dockerOut(t, "exec", "-u", "agent", agent, "sh", "-c", "head -c 32M /dev/urandom > /data/home/agent/big")
	bigSum := sha256In(t, src, "/data/home/agent/big")
	// A root-owned setuid file in the agent's home: restored as the agent's, without the bit.
	dockerOut(t, "exec", "-u", "0", agent, "sh", "-c", "cp /bin/true /data/home/agent/suid && chmod 4755 /data/home/agent/suid")
	// Root's writer: hb quiesce stops only the box users' processes, the
	// engine's pause stops every one.
	dockerOut(t, "exec", "-u", "0", agent, "sqlite3", "/data/home/agent/db.sqlite", "pragma journal_mode=wal; create table t(id integer primary key, v blob);")
	dockerOut(t, "exec", "-d", "-u", "0", agent, "sh", "-c",
		`yes 'begin; insert into t(v) values(randomblob(800)); delete from t where id <= (select max(id) from t) - 2000; commit;' | sqlite3 /data/home/agent/db.sqlite`)
	rows := func() string {
		return dockerOut(t, "exec", "-u", "0", agent, "sqlite3", "-cmd", ".timeout 10000", "/data/home/agent/db.sqlite", "select max(id) from t")
	}
	before := rows()

	r := boxes(t, dir, "save", src)
	if r.code != 0 {
		t.Fatalf("save: %+v", r)
	}
	thawed(t, src, "after save")
	if after := rows(); after == before {
		t.Errorf("the database writer did not run (max id %s before and after save)", after)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "backups"))
	if len(entries) != 1 {
		t.Fatalf("backups/ holds %v", entries)
	}
	file := filepath.Join(dir, "backups", entries[0].Name())

	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		for _, step := range []string{"pausing", "streaming /data", "verifying the archive"} {
			t.Run("save "+sig.String()+" at "+step, func(t *testing.T) {
				before, _ := os.ReadDir(filepath.Join(dir, "backups"))
				printed := signalAt(t, bin, dir, sig, "saving "+src+": "+step, 1, "save", src)
				if sig == syscall.SIGINT {
					thawed(t, src, "after Ctrl-C")
					noPartials(t, dir, "after Ctrl-C")
					// Unless the save published its archive before the
					// signal came, it says what the Ctrl-C left.
					after, _ := os.ReadDir(filepath.Join(dir, "backups"))
					if said := "saving " + src + ": interrupted; no archive was written, and the box is resumed"; len(after) == len(before) && !strings.Contains(printed, said) {
						t.Errorf("save after Ctrl-C printed:\n%s\nwant %q", printed, said)
					}
				} else {
					r := boxes(t, dir, "plan", "--detailed-exitcode", "--target", src)
					frozen := step != "verifying the archive" // by then the save had thawed the box
					if frozen && (r.code != 2 || !strings.Contains(r.stdout, "save was cut short")) {
						t.Errorf("plan after the kill does not show the frozen box: %+v", r)
					}
					if r := boxes(t, dir, "ls"); r.code != 0 {
						t.Errorf("ls: %+v", r)
					}
					noPartials(t, dir, "after ls")
					// The next command on the box thaws it.
					if r := boxes(t, dir, "exec", src, "--", "true"); r.code != 0 {
						t.Errorf("exec after the kill: %+v", r)
					}
					thawed(t, src, "after the next command")
				}
				if r := boxes(t, dir, "plan", "--detailed-exitcode", "--target", src); r.code != 0 {
					t.Errorf("plan once thawed: %+v", r)
				}
			})
		}
	}

	// load killed at several points: plan and doctor say the restore is
	// incomplete; load again finishes it.
	for i, step := range []string{"creating network", "restoring /data", "resuming the restored box"} {
		t.Run("load killed at "+step, func(t *testing.T) {
			removeBoxes(dst)
			signalAt(t, bin, dir, syscall.SIGKILL, dst+": "+step, 1, "load", file, dst)
			r := boxes(t, dir, "plan", "--detailed-exitcode", "--target", dst)
			if r.code != 2 || !strings.Contains(r.stdout, "restore incomplete") {
				t.Errorf("plan after the kill: %+v", r)
			}
			if step != "creating network" {
				if r := boxes(t, dir, "doctor", dst); r.code != 1 || !strings.Contains(r.stdout, "restore incomplete") {
					t.Errorf("doctor after the kill: %+v", r)
				}
			}
			if r := boxes(t, dir, "load", file, dst); r.code != 0 {
				t.Fatalf("load again: %+v", r)
			}
			if got := sha256In(t, dst, "/data/home/agent/big"); got != bigSum {
				t.Errorf("restored big file %s, want %s", got, bigSum)
			}
			if i == 0 {
				check := dockerOut(t, "exec", "-u", "0", compose.ContainerName(dst, compose.AgentService), "sqlite3", "/data/home/agent/db.sqlite", "PRAGMA integrity_check")
				if check != "ok" {
					t.Errorf("the database saved while written fails its integrity check: %s", check)
				}
				if got := dockerOut(t, "exec", "-u", "0", compose.ContainerName(dst, compose.AgentService), "stat", "-c", "%U %a", "/data/home/agent/suid"); got != "agent 755" {
					t.Errorf("a root-owned setuid file is restored as %q, want agent's without setuid", got)
				}
			}
			if r := boxes(t, dir, "plan", "--detailed-exitcode", "--target", dst); r.code != 0 {
				t.Errorf("plan after load: %+v", r)
			}
		})
	}

	t.Run("seeding apply killed", func(t *testing.T) {
		writeFile(t, filepath.Join(dir, "boxes.yaml"), yaml+"  "+seeded+": {restore: backups/"+entries[0].Name()+"}\n")
		signalAt(t, bin, dir, syscall.SIGKILL, seeded+": restoring /data", 1, "apply", "--auto-approve", "--target", seeded)
		time.Sleep(100 * time.Millisecond)
		r := boxes(t, dir, "plan", "--detailed-exitcode", "--target", seeded)
		if r.code != 2 || !strings.Contains(r.stdout, "restore incomplete") {
			t.Errorf("plan after the kill: %+v", r)
		}
		if r := boxes(t, dir, "apply", "--auto-approve", "--target", seeded); r.code != 0 {
			t.Fatalf("apply after the kill: %+v", r)
		}
		if got := sha256In(t, seeded, "/data/home/agent/big"); got != bigSum {
			t.Errorf("seeded big file %s, want %s", got, bigSum)
		}
		if r := boxes(t, dir, "plan", "--detailed-exitcode", "--target", seeded); r.code != 0 {
			t.Errorf("plan after apply: %+v", r)
		}
	})
}
