package toolstate

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// entries lists a tar: each entry's name, type, owner, mode, time, link
// target and content.
func entries(t *testing.T, b []byte) []string {
	t.Helper()
	var out []string
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		out = append(out, fmt.Sprintf("%s %c %d:%d %o %s %s %q", h.Name, h.Typeflag, h.Uid, h.Gid, h.Mode, h.ModTime.UTC().Format(time.RFC3339), h.Linkname, data))
	}
}

// The tar holds the tree under its name, every entry owned as told, with
// its permission bits (not setuid, setgid or sticky) and time, links as
// links; the files' bytes go through Content.
func TestWriteTar(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "config.yaml", "sessions/s1.json", "run/")
	link(t, "sessions/s1.json", filepath.Join(dir, "latest"))
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	for p, mode := range map[string]os.FileMode{".": 0o700, "config.yaml": 0o600, "sessions/s1.json": 0o4755, "run": 0o1777, "sessions": 0o750} {
		if err := os.Chmod(filepath.Join(dir, p), mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"config.yaml", "sessions/s1.json", "run", "sessions", "."} {
		if err := os.Chtimes(filepath.Join(dir, p), old, old); err != nil {
			t.Fatal(err)
		}
	}
	tree, err := Check(dir, "state", DefaultMaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	var counted int64
	err = tree.WriteTar(&b, TarOptions{Name: ".hermes.new", UID: 1234, GID: 5678, Content: func(r io.Reader) io.Reader {
		return readFunc(func(p []byte) (int, error) { n, err := r.Read(p); counted += int64(n); return n, err })
	}})
	if err != nil {
		t.Fatal(err)
	}
	at := old.Format(time.RFC3339)
	want := []string{
		".hermes.new/ 5 1234:5678 700 " + at + `  ""`,
		".hermes.new/config.yaml 0 1234:5678 600 " + at + `  "config.yaml"`,
		".hermes.new/latest 2 1234:5678 777 ",
		".hermes.new/run/ 5 1234:5678 777 " + at + `  ""`,
		".hermes.new/sessions/ 5 1234:5678 750 " + at + `  ""`,
		".hermes.new/sessions/s1.json 0 1234:5678 755 " + at + `  "sessions/s1.json"`,
	}
	got := entries(t, b.Bytes())
	if len(got) != len(want) {
		t.Fatalf("tar:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("entry %d: %s\nwant %s…", i, got[i], want[i])
		}
	}
	if !strings.HasSuffix(got[2], " sessions/s1.json \"\"") {
		t.Errorf("link entry %s", got[2])
	}
	if counted != tree.Bytes {
		t.Errorf("Content read %d bytes, the files hold %d", counted, tree.Bytes)
	}
}

type readFunc func([]byte) (int, error)

func (f readFunc) Read(p []byte) (int, error) { return f(p) }

// A tree changed since its check is refused as it is written: a file
// grown, swapped for another, made a link, removed; a link pointed
// elsewhere.
func TestWriteTarRefusesChanges(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(t *testing.T, dir string)
		want   string
	}{
		{"grown", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "b"), []byte("bigger now"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "state/b changed while it was imported: its size went from 1 to 10 bytes"},
		{"another file", func(t *testing.T, dir string) {
			write(t, dir, "c2")
			if err := os.Rename(filepath.Join(dir, "c2"), filepath.Join(dir, "c")); err != nil {
				t.Fatal(err)
			}
		}, "state/c changed while it was imported: it is another file now"},
		{"a link now", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "b")); err != nil {
				t.Fatal(err)
			}
			link(t, "c", filepath.Join(dir, "b"))
		}, "state/b changed while it was imported: it was a regular file and is now a link"},
		{"removed", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "c")); err != nil {
				t.Fatal(err)
			}
		}, "state/c changed while it was imported: it cannot be read again: no such file or directory"},
		{"link moved", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "l")); err != nil {
				t.Fatal(err)
			}
			link(t, "b", filepath.Join(dir, "l"))
		}, "state/l changed while it was imported: the link no longer points to c"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "b"), []byte("b"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "c"), []byte("c"), 0o644); err != nil {
				t.Fatal(err)
			}
			link(t, "c", filepath.Join(dir, "l"))
			tree, err := Check(dir, "state", DefaultMaxBytes)
			if err != nil {
				t.Fatal(err)
			}
			c.change(t, dir)
			err = tree.WriteTar(io.Discard, TarOptions{Name: "x"})
			var ch *ChangedError
			if !errors.As(err, &ch) || err.Error() != c.want || ch.Hint() != "stop the tool on this machine, then import again" {
				t.Errorf("WriteTar: %v\nwant %s", err, c.want)
			}
		})
	}
}
