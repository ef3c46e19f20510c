package conformance

import (
	"archive/tar"
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"testing"
	"time"
)

// entry is one file or directory of a tar stream.
type entry struct {
	name     string
	dir      bool
	data     []byte
	mode     fs.FileMode
	uid, gid int
}

func dirEntry(name string) entry { return entry{name: name, dir: true, mode: 0o755} }

func fileEntry(name string, data []byte) entry {
	return entry{name: name, data: data, mode: 0o644}
}

// modTime is every entry's modification time: the suite compares bytes,
// modes and owners, not times.
var modTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// tarOf is a tar stream of entries, in their order.
func tarOf(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: int64(e.mode.Perm()), Uid: e.uid, Gid: e.gid, ModTime: modTime, Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag, h.Name = tar.TypeDir, e.name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// untar reads a tar stream into its entries by name (without a trailing
// slash); only directories and regular files are kept.
func untar(r io.Reader) (map[string]entry, error) {
	out := map[string]entry{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		name := path.Clean(strings.TrimSuffix(h.Name, "/"))
		e := entry{name: name, mode: fs.FileMode(h.Mode).Perm(), uid: h.Uid, gid: h.Gid}
		switch h.Typeflag {
		case tar.TypeDir:
			e.dir = true
		case tar.TypeReg:
			if e.data, err = io.ReadAll(tr); err != nil {
				return nil, err
			}
		default:
			continue
		}
		out[name] = e
	}
}

func names(entries map[string]entry) string {
	var out []string
	for n := range entries {
		out = append(out, n)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// copyTo unpacks stream at /data in container id.
func (s *suite) copyTo(t *testing.T, id string, stream []byte) {
	t.Helper()
	if err := s.e.CopyTo(s.ctx(t), id, "/data", bytes.NewReader(stream)); err != nil {
		t.Fatalf("CopyTo /data of %.12s: %v", id, err)
	}
}

// copyFrom streams p out of container id.
func (s *suite) copyFrom(t *testing.T, id, p string) map[string]entry {
	t.Helper()
	rc, err := s.e.CopyFrom(s.ctx(t), id, p)
	if err != nil {
		t.Fatalf("CopyFrom %s of %.12s: %v", p, id, err)
	}
	defer rc.Close()
	entries, err := untar(rc)
	if err != nil {
		t.Fatalf("CopyFrom %s of %.12s: reading its tar stream: %v", p, id, err)
	}
	return entries
}

// readFile is the content of file p in container id, through CopyFrom.
func (s *suite) readFile(t *testing.T, id, p string) []byte {
	t.Helper()
	entries := s.copyFrom(t, id, p)
	e, ok := entries[path.Base(p)]
	if !ok || e.dir {
		t.Fatalf("CopyFrom %s of %.12s holds %s; want the file %s", p, id, names(entries), path.Base(p))
	}
	return e.data
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}
