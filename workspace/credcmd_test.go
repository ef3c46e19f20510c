package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/spec"
)

const cmdSecret = "sk-cmd-0123456789-never-shown"

// openAt opens a workspace on boxes.yaml src in a directory of its own.
func openAt(t *testing.T, src string) *Workspace {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "boxes.yaml"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := Open(filepath.Join(dir, "boxes.yaml"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// A credential's value is read where from: says: an environment variable,
// a file, or what a command prints, run by sh -c in boxes.yaml's directory.
// A value that cannot be read is an error naming where it was looked for,
// never holding the value.
func TestCredentialValue(t *testing.T) {
	w := openAt(t, "version: 1\nfleet: f\nboxes:\n  a: {}\n")
	dir := filepath.Dir(w.Path)
	for name, content := range map[string]string{"key": cmdSecret + "\n", "two": "one\ntwo\n", "empty": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("BOXES_TEST_CRED", cmdSecret)
	t.Setenv("BOXES_TEST_EMPTY", "")
	CommandTimeout = 2 * time.Second
	t.Cleanup(func() { CommandTimeout = 30 * time.Second })
	for _, tc := range []struct {
		from, want, err string
	}{
		{"env:BOXES_TEST_CRED", cmdSecret, ""},
		{"env:BOXES_TEST_UNSET_X", "", "BOXES_TEST_UNSET_X is not set in this environment"},
		{"env:BOXES_TEST_EMPTY", "", "env:BOXES_TEST_EMPTY is empty"},
		{"file:key", cmdSecret, ""},
		{"file:missing", "", "reading missing: no such file or directory"},
		{"file:two", "", "file:two holds a line break or NUL"},
		{"cmd:cat key", cmdSecret, ""},
		{"cmd:printf '%s' \"$BOXES_TEST_CRED\"", cmdSecret, ""},
		{"cmd:printf '%s\\r\\n' \"$BOXES_TEST_CRED\"", cmdSecret, ""},
		{"cmd:cat key | tr a-z A-Z | tr A-Z a-z", cmdSecret, ""},
		{"cmd:test \"$(pwd)\" = \"" + dir + "\" && cat key", cmdSecret, ""},
		{"cmd:cat", "", "cmd:cat printed nothing on its standard output"}, // nothing on its standard input
		{"cmd:printf '%s\\n\\n' x", "", "cmd:printf '%s\\n\\n' x holds a line break or NUL"},
		{"cmd:cat two", "", "cmd:cat two holds a line break or NUL"},
		{"cmd:echo 'no token: run gh auth login' >&2; exit 4", "", "cmd:echo 'no token: run gh auth login' >&2; exit 4 failed (exit 4): no token: run gh auth login"},
		{"cmd:echo first >&2; echo last >&2; false", "", "failed (exit 1): last"},
		{"cmd:cat key; echo \"refused $(cat key)\" >&2; exit 3", "", "failed (exit 3): refused [its output]"},
		{"cmd:no-such-command-here", "", "cmd:no-such-command-here failed (exit 127): sh: "}, // then the shell's words
		{"cmd:true", "", "cmd:true printed nothing on its standard output"},
		{"cmd:head -c 70000 /dev/zero | tr '\\0' x", "", "printed more than 64 KiB, more than a header carries"},
	} {
		t.Run(tc.from, func(t *testing.T) {
			got, err := w.credentialValue(context.Background(), spec.Credential{Name: "x", From: tc.from})
			if tc.err == "" {
				if err != nil || got != tc.want {
					t.Fatalf("%q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("%q, %v; want an error saying %q", got, err, tc.err)
			}
			if strings.Contains(err.Error(), cmdSecret) {
				t.Errorf("the error holds the value: %v", err)
			}
		})
	}
}

// A command that does not finish is stopped at CommandTimeout, with the
// processes it started (a pipeline keeps the output open otherwise).
func TestCredentialCommandTimeout(t *testing.T) {
	CommandTimeout = 300 * time.Millisecond
	t.Cleanup(func() { CommandTimeout = 30 * time.Second })
	dir := t.TempDir()
	began := time.Now()
	const command = "echo waiting >&2; sh -c 'echo $$ > child; exec sleep 30' | cat"
	_, err := runCommand(context.Background(), command, dir)
	if err == nil || !strings.Contains(err.Error(), "cmd:"+command+" did not finish within 300ms, and was stopped: waiting") {
		t.Errorf("err %v", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("stopping took %s", took)
	}
	data, err := os.ReadFile(filepath.Join(dir, "child"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	// The pipeline's sleep went with it.
	for deadline := time.Now().Add(5 * time.Second); alive(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the command's sleep (pid %d) outlived it", pid)
		}
	}
	// A boxes command interrupted stops it too, and says so as the context does.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := runCommand(ctx, "sleep 30", t.TempDir()); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("interrupted: %v", err)
	}
}

// Doors reads every credential of the boxes named: a command two boxes
// share runs once; a command that fails leaves only the boxes that use it
// unread, naming the box, the credential and the command's error, with the
// hint for a command.
func TestDoorsRunEachCommandOnce(t *testing.T) {
	w := openAt(t, `version: 1
fleet: f
defaults:
  credentials:
    shared: {to: api.example.com, header: x-api-key, from: "cmd:echo run >> runs; printf sk-shared"}
boxes:
  alpha:
    credentials:
      broken: {to: broken.example.com, header: x-api-key, from: "cmd:echo 'not logged in' >&2; exit 2"}
  beta: {}
  gamma: {}
`)
	doors, unread := w.Doors(context.Background(), nil)
	if len(unread) != 1 || unread["alpha"] == nil {
		t.Fatalf("unread %v; want alpha's alone", unread)
	}
	err := unread["alpha"]
	want := `box alpha, credential broken: cmd:echo 'not logged in' >&2; exit 2 failed (exit 2): not logged in`
	if err.Error() != want {
		t.Errorf("alpha's error %q; want %q", err, want)
	}
	if h := hint.Lines(err); len(h) != 1 || !strings.Contains(h[0], "run it here") {
		t.Errorf("hints %q", h)
	}
	for _, b := range []string{"alpha", "beta", "gamma"} {
		if got := doors[b].Secrets["shared"]; got != "sk-shared" {
			t.Errorf("%s's shared value %q", b, got)
		}
	}
	// A second reading, as apply does after its plan: no command runs again.
	w.Doors(context.Background(), map[string]bool{"beta": true})
	runs, err := os.ReadFile(filepath.Join(filepath.Dir(w.Path), "runs"))
	if err != nil || string(runs) != "run\n" {
		t.Errorf("the shared command ran %q times (%v); want once", runs, err)
	}
}

// alive reports whether process pid runs: it exists and, where /proc
// tells, is no zombie waiting for whoever adopted it to reap it.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}
