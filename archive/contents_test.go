package archive

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
)

// tarOf makes a tar of data entries: a name ending in "/" is a directory,
// "name>target" a hard link, "name@target" a symlink, "name=content" a file.
func tarOf(t *testing.T, entries ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	for _, e := range entries {
		var h tar.Header
		var body string
		switch {
		case strings.HasSuffix(e, "/"):
			h = tar.Header{Typeflag: tar.TypeDir, Name: e, Mode: 0o755}
		case strings.Contains(e, ">"):
			name, target, _ := strings.Cut(e, ">")
			h = tar.Header{Typeflag: tar.TypeLink, Name: name, Linkname: target}
		case strings.Contains(e, "@"):
			name, target, _ := strings.Cut(e, "@")
			h = tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target}
		default:
			name, content, _ := strings.Cut(e, "=")
			h = tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(content))}
			body = content
		}
		h.ModTime = now
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestContentsCheckListing(t *testing.T) {
	dirs := []string{"data/", "data/home/", "data/home/agent/"}
	data := tarOf(t, append(dirs, "data/home/agent/a=one", "data/home/agent/b>data/home/agent/a", "data/home/agent/c=two", "data/home/agent/l@c")...)
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	var arch bytes.Buffer
	if _, err := Write(&arch, Manifest{Box: "alpha"}, bytes.NewReader(data), id.Recipient()); err != nil {
		t.Fatal(err)
	}
	d, err := OpenData(bytes.NewReader(arch.Bytes()), Options{Identities: []age.Identity{id}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, d); err != nil {
		t.Fatal(err)
	}
	c, err := d.Contents()
	if err != nil || c.Files() != 3 {
		t.Fatalf("contents: %v", err)
	}
	// A listing as ListCommand prints it, of the restored /data.
	listing := func(lines ...string) string {
		var b strings.Builder
		for _, l := range lines {
			head, link, _ := strings.Cut(l, "@")
			b.WriteString(head + "\x00" + link + "\x00")
		}
		return b.String()
	}
	root := []string{"d 4096 /data", "d 4096 /data/home", "d 4096 /data/home/agent"}
	same := append(root[:len(root):len(root)], "f 3 /data/home/agent/a", "f 3 /data/home/agent/b", "f 3 /data/home/agent/c", "l 1 /data/home/agent/l@c")
	for _, tc := range []struct {
		name    string
		entries []string
		want    string
	}{
		{"the same", same, ""},
		{"markers added", append([]string{"d 4096 /data/.hb", "f 1 /data/.hb/quiesced"}, same...), ""},
		{"cut short", append(root[:len(root):len(root)], "f 3 /data/home/agent/a", "f 3 /data/home/agent/b"), "2 missing (data/home/agent/c, data/home/agent/l)"},
		{"truncated", append(root[:len(root):len(root)], "f 3 /data/home/agent/a", "f 3 /data/home/agent/b", "f 2 /data/home/agent/c", "l 1 /data/home/agent/l@c"), "1 of another size (data/home/agent/c)"},
		{"a link broken", append(root[:len(root):len(root)], "f 3 /data/home/agent/a", "f 0 /data/home/agent/b", "f 3 /data/home/agent/c", "l 1 /data/home/agent/l@c"), "1 of another size (data/home/agent/b)"},
		{"another kind", append(root[:len(root):len(root)], "f 3 /data/home/agent/a", "f 3 /data/home/agent/b", "d 4096 /data/home/agent/c", "l 1 /data/home/agent/l@c"), "1 of another kind (data/home/agent/c)"},
		{"a symlink elsewhere", append(root[:len(root):len(root)], "f 3 /data/home/agent/a", "f 3 /data/home/agent/b", "f 3 /data/home/agent/c", "l 1 /data/home/agent/l@a"), "1 pointing elsewhere (data/home/agent/l)"},
	} {
		err := c.CheckListing(strings.NewReader(listing(tc.entries...)))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (!errors.Is(err, ErrRestoreMismatch) || !strings.Contains(fmtErr(err), tc.want)):
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
	// A listing cut short in the middle of an entry is an error.
	if err := c.CheckListing(strings.NewReader(listing(same...) + "f 3 /data/x")); err == nil || errors.Is(err, ErrRestoreMismatch) {
		t.Errorf("a listing cut short: %v", err)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Restored entries get a box's owners, whatever the archive recorded.
func TestDataGivesTheBoxsOwners(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []tar.Header{
		{Typeflag: tar.TypeDir, Name: "data/", Mode: 0o711, Uid: 5},
		{Typeflag: tar.TypeDir, Name: "data/home/", Mode: 0o711, Uid: 5},
		{Typeflag: tar.TypeDir, Name: "data/home/agent/", Mode: 0o700, Uid: 0},
		{Typeflag: tar.TypeReg, Name: "data/home/agent/suid", Mode: 0o4755, Uid: 0, Uname: "root"},
	} {
		h.ModTime = time.Now()
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()
	id, _ := age.GenerateX25519Identity()
	var arch bytes.Buffer
	if _, err := Write(&arch, Manifest{Box: "a"}, &buf, id.Recipient()); err != nil {
		t.Fatal(err)
	}
	d, err := OpenData(&arch, Options{Identities: []age.Identity{id}, Owner: &Owner{Home: "data/home/agent", UID: 1000, GID: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(d)
	got := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[h.Name] = fmtOwner(h)
	}
	want := map[string]string{"data/": "0:0 711", "data/home/": "0:0 711", "data/home/agent/": "1000:1000 700", "data/home/agent/suid": "1000:1000 755"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s, want %s", k, got[k], v)
		}
	}
}

func fmtOwner(h *tar.Header) string {
	return strings.Join([]string{itoa(h.Uid) + ":" + itoa(h.Gid), strconvOct(h.Mode)}, " ")
}

func itoa(n int) string { return fmt.Sprint(n) }

func strconvOct(m int64) string { return fmt.Sprintf("%o", m&0o7777) }
