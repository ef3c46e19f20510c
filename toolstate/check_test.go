package toolstate

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// write makes the files of files under dir (a name ending in / is a
// directory), each holding its own name.
func write(t *testing.T, dir string, files ...string) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(dir, f)
		if strings.HasSuffix(f, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func link(t *testing.T, target, at string) {
	t.Helper()
	if err := os.Symlink(target, at); err != nil {
		t.Fatal(err)
	}
}

// Every tree that cannot be imported is refused with the path that is
// wrong and what is wrong with it, and nothing of it is written.
func TestCheckRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		// make builds the tree in dir ("state", shown so), beside which
		// outside exists.
		make func(t *testing.T, dir string)
		max  int64
		want string
		hint string
	}{
		{"missing", func(t *testing.T, dir string) {}, 0,
			"state does not exist; nothing was changed", hintDir},
		{"not a directory", func(t *testing.T, dir string) {
			if err := os.WriteFile(dir, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, 0, "state is not a directory but a regular file; nothing was changed", hintDir},
		{"a link to a file", func(t *testing.T, dir string) {
			link(t, "outside/file", dir)
		}, 0, "state is not a directory but a regular file; nothing was changed", hintDir},
		{"empty", func(t *testing.T, dir string) { write(t, dir, "./") }, 0,
			"state is empty: there is nothing to import; nothing was changed", hintDir},
		{"absolute link", func(t *testing.T, dir string) {
			write(t, dir, "config.yaml")
			link(t, filepath.Join(dir, "config.yaml"), filepath.Join(dir, "abs"))
		}, 0, "state/abs is a link to DIR/config.yaml, an absolute path: only relative links to something inside state are imported; nothing was changed", hintLink},
		{"link out", func(t *testing.T, dir string) {
			write(t, dir, "sub/a")
			link(t, "../../outside/file", filepath.Join(dir, "sub", "out"))
		}, 0, "state/sub/out is a link to ../../outside/file, outside state; nothing was changed", hintLink},
		{"link out through another link", func(t *testing.T, dir string) {
			write(t, dir, "a")
			link(t, ".", filepath.Join(dir, "here"))
			link(t, "here/../outside/file", filepath.Join(dir, "sneaky"))
		}, 0, "state/sneaky is a link to here/../outside/file, which leads out of state through another link, or cannot be followed", hintLink},
		{"link to nothing", func(t *testing.T, dir string) {
			write(t, dir, "a")
			link(t, "gone", filepath.Join(dir, "dangling"))
		}, 0, "state/dangling is a link to gone, which does not exist; nothing was changed", hintDangles},
		{"fifo", func(t *testing.T, dir string) {
			write(t, dir, "a", "run/")
			if err := syscall.Mkfifo(filepath.Join(dir, "run", "pipe"), 0o600); err != nil {
				t.Skip("no named pipes here:", err)
			}
		}, 0, "state/run/pipe is a named pipe (fifo): only directories, regular files and links that stay inside state are imported; nothing was changed", hintKind},
		{"socket", func(t *testing.T, dir string) {
			write(t, dir, "a")
			l, err := net.Listen("unix", filepath.Join(dir, "sock"))
			if err != nil {
				t.Skip("no unix sockets here:", err)
			}
			t.Cleanup(func() { l.Close() })
		}, 0, "state/sock is a socket: only directories, regular files and links that stay inside state are imported; nothing was changed", hintKind},
		{"device", func(t *testing.T, dir string) {
			write(t, dir, "a")
			// /dev/null's numbers: character device 1, 3.
			if err := syscall.Mknod(filepath.Join(dir, "null"), syscall.S_IFCHR|0o600, 1<<8|3); err != nil {
				t.Skip("cannot make a device here:", err)
			}
		}, 0, "state/null is a character device: only directories, regular files and links that stay inside state are imported; nothing was changed", hintKind},
		{"too big", func(t *testing.T, dir string) {
			write(t, dir, "a/b", "a/c", "z")
		}, 5, "state holds more than 5 B of files, the bound (passed at a/c); nothing was changed", hintSize},
		{"unreadable file", func(t *testing.T, dir string) {
			if os.Geteuid() == 0 {
				t.Skip("root reads every file")
			}
			write(t, dir, "secret")
			if err := os.Chmod(filepath.Join(dir, "secret"), 0); err != nil {
				t.Fatal(err)
			}
		}, 0, "state/secret cannot be read: permission denied; nothing was changed", "make it readable to you, or remove it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			top := t.TempDir()
			write(t, top, "outside/file")
			dir := filepath.Join(top, "state")
			c.make(t, dir)
			max := c.max
			if max == 0 {
				max = DefaultMaxBytes
			}
			tree, err := Check(dir, "state", max)
			var r *Refusal
			want := strings.ReplaceAll(c.want, "DIR", dir)
			if !errors.As(err, &r) || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("Check: %v (%+v)\nwant %s", err, tree, want)
			}
			if r.Hint() != c.hint {
				t.Errorf("hint %q, want %q", r.Hint(), c.hint)
			}
		})
	}
}

// A tree of files, directories and links that stay inside it is taken
// whole, in order, each directory before what it holds; the directory
// named may itself be a link, which is followed.
func TestCheckTakes(t *testing.T) {
	top := t.TempDir()
	real := filepath.Join(top, "real")
	write(t, real, "config.yaml", "sessions/s1.json", "sessions/deep/s2.json", "empty/")
	link(t, "sessions/s1.json", filepath.Join(real, "latest"))
	link(t, "../sessions", filepath.Join(real, "empty", "up"))
	link(t, "real", filepath.Join(top, "named"))
	tree, err := Check(filepath.Join(top, "named"), "~/.hermes", DefaultMaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range tree.Entries {
		got = append(got, e.Path+" "+e.Mode.Type().String()+" "+e.Link)
	}
	want := []string{
		". d--------- ", "config.yaml ---------- ", "empty d--------- ", "empty/up L--------- ../sessions",
		"latest L--------- sessions/s1.json", "sessions d--------- ", "sessions/deep d--------- ",
		"sessions/deep/s2.json ---------- ", "sessions/s1.json ---------- ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	bytes := int64(len("config.yaml") + len("sessions/s1.json") + len("sessions/deep/s2.json"))
	if tree.Files != 3 || tree.Dirs != 3 || tree.Links != 2 || tree.Bytes != bytes || tree.Path != real || tree.Shown != "~/.hermes" {
		t.Errorf("tree %+v", tree)
	}
	// Exactly at the bound is within it.
	if _, err := Check(real, "real", bytes); err != nil {
		t.Errorf("at the bound: %v", err)
	}
}

func TestNamed(t *testing.T) {
	for _, name := range []string{"hermes", "claude", "codex"} {
		if tool, err := Named(name); err != nil || tool.Name != name || tool.Dir != "."+name {
			t.Errorf("Named(%s) = %+v, %v", name, tool, err)
		}
	}
	if _, err := Named("cursor"); err == nil || err.Error() != `"cursor" is not a tool boxes imports the state of; the tools are hermes, claude or codex` {
		t.Errorf("Named(cursor): %v", err)
	}
}
