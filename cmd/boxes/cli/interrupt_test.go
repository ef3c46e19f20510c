//go:build linux

package cli

import (
	"bytes"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/backup"
)

// The tests here send SIGINT and SIGTERM to the test process itself while
// Main runs boxes in it: Main's handler takes them, as it does in the
// binary. Each signal is sent while Main is blocked reading an archive
// from a named pipe the test feeds, so it surely comes mid-read, at a
// place the test chooses.

// bigBoxArchive is a box archive with passphrase p whose data holds one
// file of size random bytes: long enough that reading it is far from done
// when the signal comes.
func bigBoxArchive(t *testing.T, p string, size int) []byte {
	t.Helper()
	body := make([]byte, size)
	rand.NewChaCha8([32]byte{3}).Read(body)
	return archiveOf(t, p, "big", body)
}

// gate is a command's stderr that holds the command at the first line
// stop matches, until released.
type gate struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	stop    func(line string) bool
	reached chan struct{}
	release chan struct{}
}

func newGate(stop func(string) bool) *gate {
	return &gate{stop: stop, reached: make(chan struct{}), release: make(chan struct{})}
}

func (g *gate) Write(p []byte) (int, error) {
	g.mu.Lock()
	g.buf.Write(p)
	hit := g.stop != nil && g.stop(string(p))
	if hit {
		g.stop = nil
	}
	g.mu.Unlock()
	if hit {
		close(g.reached)
		<-g.release
	}
	return len(p), nil
}

func (g *gate) String() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.buf.String()
}

// mainRun is boxes run by Main in the background.
type mainRun struct {
	code chan int
	out  bytes.Buffer
	err  *gate
}

func startMain(t *testing.T, stderr *gate, args ...string) *mainRun {
	t.Helper()
	m := &mainRun{code: make(chan int, 1), err: stderr}
	args = append([]string{"-f", filepath.Join(t.TempDir(), "boxes.yaml")}, args...)
	go func() { m.code <- Main(Streams{In: strings.NewReader(""), Out: &m.out, Err: stderr}, args) }()
	return m
}

// feedUntilSignal opens the named pipe path once the command does, writes
// it the first part bytes of ar, which the command takes but for the
// pipe's buffer, then calls signal and writes the rest for as long as the
// command reads. It fails the test if the command ends before it opens
// the pipe.
func feedUntilSignal(t *testing.T, m *mainRun, path string, ar []byte, part int, signal func()) {
	t.Helper()
	opened := make(chan *os.File, 1)
	go func() {
		if w, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			opened <- w
		}
	}()
	var w *os.File
	select {
	case w = <-opened:
	case c := <-m.code:
		t.Fatalf("exit %d before reading the pipe; stderr %q", c, m.err.String())
	case <-time.After(30 * time.Second):
		t.Fatal("the command did not open the pipe")
	}
	w.SetWriteDeadline(time.Now().Add(60 * time.Second))
	if _, err := w.Write(ar[:part]); err != nil {
		t.Fatal(err)
	}
	signal()
	// The rest unblocks a read under way; once the command stops, a
	// write fails (EPIPE) and the pipe is closed.
	go func() {
		w.Write(ar[part:])
		w.Close()
	}()
}

// wait is the command's exit code, which it must give within 5 s of the
// signal.
func (m *mainRun) wait(t *testing.T, since time.Time) int {
	t.Helper()
	select {
	case c := <-m.code:
		return c
	case <-time.After(5*time.Second - time.Since(since)):
		t.Fatalf("still running 5 s after the signal; stderr %q", m.err.String())
	}
	return 0
}

// kill sends sig to this process and returns when.
func kill(t *testing.T, sig syscall.Signal) time.Time {
	t.Helper()
	if err := syscall.Kill(os.Getpid(), sig); err != nil {
		t.Fatal(err)
	}
	return time.Now()
}

// regularBytes is the size of the regular files under dir.
func regularBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// listing is what a test expects unchanged of a directory: whether it
// exists, its entries, mode and mtime.
func listing(t *testing.T, dir string) string {
	t.Helper()
	fi, err := os.Stat(dir)
	if err != nil {
		return err.Error()
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return fi.Mode().String() + " " + fi.ModTime().String() + " [" + strings.Join(names, " ") + "]"
}

func TestVerifyInterruptedBySignal(t *testing.T) {
	t.Setenv(backup.EnvPassphrase, "pw")
	t.Setenv(backup.EnvIdentity, "")
	ar := bigBoxArchive(t, "pw", 24<<20)
	for _, tc := range []struct {
		sig  syscall.Signal
		args []string
	}{
		{syscall.SIGINT, nil},
		{syscall.SIGTERM, []string{"--json"}},
	} {
		t.Run(strings.Join(append([]string{tc.sig.String()}, tc.args...), " "), func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "alpha-20261202-101500"+archive.Ext)
			if err := syscall.Mkfifo(file, 0o600); err != nil {
				t.Fatal(err)
			}
			m := startMain(t, newGate(nil), append([]string{"verify", file}, tc.args...)...)
			var sent time.Time
			feedUntilSignal(t, m, file, ar, 8<<20, func() { sent = kill(t, tc.sig) })
			code := m.wait(t, sent)
			want := "boxes: error: verifying " + shown(file) + ": interrupted\n"
			// No report: with --json, stdout holds only the error, as
			// for any command that fails before its result.
			var wantOut string
			if len(tc.args) > 0 {
				wantOut = "{\n  \"format_version\": 1,\n  \"errors\": [\n    {\n      \"message\": \"verifying " + shown(file) + ": interrupted\"\n    }\n  ]\n}\n"
			}
			if code != 1 || !strings.HasSuffix(m.err.String(), want) || m.out.String() != wantOut {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 1, stdout %q and a stderr ending %q", code, m.out.String(), m.err.String(), wantOut, want)
			}
		})
	}
}

// extract checks the archive whole before it extracts it: the test lets it
// read the archive's file for the check, then, before it opens the file
// again to extract it, puts a named pipe in its place.
func TestExtractInterruptedBySignal(t *testing.T) {
	t.Setenv(backup.EnvPassphrase, "pw")
	t.Setenv(backup.EnvIdentity, "")
	ar := bigBoxArchive(t, "pw", 24<<20)
	targets := map[string]func(t *testing.T) string{
		"new directory": func(t *testing.T) string { return filepath.Join(t.TempDir(), "out") },
		"existing empty directory": func(t *testing.T) string {
			dst := filepath.Join(t.TempDir(), "out")
			if err := os.Mkdir(dst, 0o750); err != nil {
				t.Fatal(err)
			}
			old := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
			if err := os.Chtimes(dst, old, old); err != nil {
				t.Fatal(err)
			}
			return dst
		},
	}
	for name, target := range targets {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			t.Run(name+" "+sig.String(), func(t *testing.T) {
				dir := t.TempDir()
				file := filepath.Join(dir, "alpha-20261202-101500"+archive.Ext)
				if err := os.WriteFile(file, ar, 0o600); err != nil {
					t.Fatal(err)
				}
				pipe := filepath.Join(dir, "pipe")
				if err := syscall.Mkfifo(pipe, 0o600); err != nil {
					t.Fatal(err)
				}
				dst := target(t)
				before := listing(t, dst)

				// The check's last progress line: "verifying: 24.0 MiB in 0.3s, …".
				g := newGate(func(line string) bool { return strings.Contains(line, "verifying: ") && strings.Contains(line, " in ") })
				m := startMain(t, g, "extract", file, dst)
				select {
				case <-g.reached:
				case c := <-m.code:
					t.Fatalf("exit %d before the check ended; stderr %q", c, g.String())
				case <-time.After(30 * time.Second):
					t.Fatal("the check did not end")
				}
				if err := os.Rename(pipe, file); err != nil {
					t.Fatal(err)
				}
				close(g.release)

				var sent time.Time
				var written int64
				feedUntilSignal(t, m, file, ar, 8<<20, func() {
					written = regularBytes(dst)
					sent = kill(t, sig)
				})
				code := m.wait(t, sent)
				if written == 0 {
					t.Errorf("nothing was written yet when %v was sent: not mid-extract", sig)
				}
				want := "boxes: error: extracting " + shown(file) + ": interrupted; nothing was extracted\n"
				if code != 1 || !strings.HasSuffix(g.String(), want) || m.out.Len() != 0 {
					t.Errorf("exit %d, stdout %q, stderr %q; want exit 1, no stdout and a stderr ending %q", code, m.out.String(), g.String(), want)
				}
				if after := listing(t, dst); after != before {
					t.Errorf("%s was %s before, %s after", dst, before, after)
				}
			})
		}
	}
}
