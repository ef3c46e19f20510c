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
// "name>target" a hard link, "name=content" a file.
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

func TestContentsCheckRestoredData(t *testing.T) {
	dirs := []string{"data/", "data/home/", "data/home/agent/"}
	data := tarOf(t, append(dirs, "data/home/agent/a=one", "data/home/agent/b>data/home/agent/a", "data/home/agent/c=two")...)
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
	if err != nil || c.Files() != 2 {
		t.Fatalf("contents: %v", err)
	}
	for _, tc := range []struct {
		name    string
		entries []string
		want    string
	}{
		{"the same", []string{"data/home/agent/a=one", "data/home/agent/b>data/home/agent/a", "data/home/agent/c=two"}, ""},
		// The engine may list the other name of a hard link first.
		{"links the other way, markers added", []string{"data/.hb/", "data/.hb/quiesced=x", "data/home/agent/b=one", "data/home/agent/a>data/home/agent/b", "data/home/agent/c=two"}, ""},
		{"cut short", []string{"data/home/agent/a=one"}, "1 file(s) missing (data/home/agent/c)"},
		{"truncated", []string{"data/home/agent/a=one", "data/home/agent/c=tw"}, "1 file(s) with other content (data/home/agent/c)"},
	} {
		err := c.Check(bytes.NewReader(tarOf(t, append(dirs, tc.entries...)...)))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (!errors.Is(err, ErrRestoreMismatch) || !strings.Contains(fmtErr(err), tc.want)):
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
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
