package archive_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/hermes-box/boxes/archive"
)

func TestMain(m *testing.M) {
	archive.ScryptWorkFactor = 10 // fast; age's default takes about a second
	code := m.Run()
	stopGPG()
	os.Exit(code)
}

const passphrase = "correct horse battery staple"

var mtime = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

// entry is one tar entry of a test input.
type entry struct {
	name string
	typ  byte
	mode int64
	body string
	link string
}

func dir(name string, mode int64) entry { return entry{name: name, typ: tar.TypeDir, mode: mode} }
func file(name string, mode int64, body string) entry {
	return entry{name: name, typ: tar.TypeReg, mode: mode, body: body}
}
func symlink(name, target string) entry {
	return entry{name: name, typ: tar.TypeSymlink, mode: 0o777, link: target}
}
func hardlink(name, target string) entry {
	return entry{name: name, typ: tar.TypeLink, mode: 0o644, link: target}
}

// layout is the smallest data a box has.
var layout = []entry{
	dir("data/", 0o711),
	dir("data/home/", 0o711),
	dir("data/home/agent/", 0o700),
}

// bigBody is incompressible and longer than an age chunk (64 KiB), so the
// ciphertext has several chunks.
var bigBody = func() string {
	b := make([]byte, 200_000)
	rng := rand.NewChaCha8([32]byte{1})
	rng.Read(b)
	return string(b)
}()

// boxData is a box's /data shaped like the engine's copy output.
func boxData() []entry {
	return append(append([]entry{}, layout...),
		file("data/home/agent/.bashrc", 0o644, "export PATH=$HOME/bin:$PATH\n"),
		dir("data/home/agent/bin/", 0o755),
		file("data/home/agent/bin/run", 0o4755, "#!/bin/sh\necho hi\n"),
		symlink("data/home/agent/bin/x", "/opt/hermes-box/bin/x"),
		symlink("data/home/agent/rel", "bin/run"),
		hardlink("data/home/agent/bashrc.bak", "data/home/agent/.bashrc"),
		file("data/home/agent/big", 0o600, bigBody),
		file("data/home/agent/empty", 0o640, ""),
		dir("data/executor/", 0o700),
		file("data/executor/state.json", 0o600, "{}\n"),
	)
}

// makeTar returns a tar of entries.
func makeTar(t *testing.T, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Typeflag: e.typ,
			Name:     e.name,
			Linkname: e.link,
			Mode:     e.mode,
			ModTime:  mtime,
		}
		if strings.HasPrefix(e.name, "data/home/agent/") {
			h.Uid, h.Gid = 1000, 1000
		}
		if e.typ == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readTar returns the entries of a tar stream.
func readTar(t *testing.T, r io.Reader) []entry {
	t.Helper()
	var out []entry
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(mtime) {
			t.Errorf("%s: mtime %v, want %v", h.Name, h.ModTime, mtime)
		}
		out = append(out, entry{name: h.Name, typ: h.Typeflag, mode: h.Mode, body: string(body), link: h.Linkname})
	}
}

func manifest() archive.Manifest {
	return archive.Manifest{
		Box:    "dev",
		Image:  "sha256:0123",
		Tools:  map[string]string{"node": "22.1.0"},
		Writer: "boxes test",
	}
}

func recipient(t *testing.T) age.Recipient {
	t.Helper()
	r, err := archive.PassphraseRecipient(passphrase)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func identity(t *testing.T, p string) age.Identity {
	t.Helper()
	id, err := archive.PassphraseIdentity(p)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// write makes an archive of entries with Write.
func write(t *testing.T, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := archive.Write(&buf, manifest(), bytes.NewReader(makeTar(t, entries)), recipient(t)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// seal makes an archive of any tar, bypassing Write's checks.
func seal(t *testing.T, plainTar []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc, err := age.Encrypt(&buf, recipient(t))
	if err != nil {
		t.Fatal(err)
	}
	gz := gzip.NewWriter(enc)
	if _, err := gz.Write(plainTar); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// manifestEntry is a manifest.json entry.
func manifestEntry(t *testing.T, format int, box string) entry {
	t.Helper()
	b, err := json.Marshal(archive.Manifest{Format: format, Box: box, Created: mtime})
	if err != nil {
		t.Fatal(err)
	}
	return file("manifest.json", 0o644, string(b))
}

// sealData makes an archive of a good manifest and entries, bypassing Write.
func sealData(t *testing.T, entries []entry) []byte {
	t.Helper()
	return seal(t, makeTar(t, append([]entry{manifestEntry(t, 1, "dev")}, entries...)))
}

// readData reads the whole of Data's stream and returns the first error.
func readData(r io.Reader, ids ...age.Identity) error {
	rc, err := archive.Data(r, ids...)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, rc)
	if cerr := rc.Close(); err == nil {
		err = cerr
	}
	return err
}

func wantErr(t *testing.T, what string, err error, want string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want one containing %q", what, want)
	} else if !strings.Contains(err.Error(), want) {
		t.Errorf("%s: error %q, want one containing %q", what, err, want)
	}
}

func TestRoundTripData(t *testing.T) {
	in := boxData()
	ar := write(t, in)

	m, sum, err := archive.Verify(bytes.NewReader(ar), identity(t, passphrase))
	if err != nil {
		t.Fatal(err)
	}
	if m.Format != archive.Format || m.Box != "dev" || m.Image != "sha256:0123" ||
		m.Tools["node"] != "22.1.0" || m.Writer != "boxes test" {
		t.Errorf("manifest %+v", m)
	}
	if m.Created.IsZero() || m.Created.Location() != time.UTC {
		t.Errorf("created %v, want a UTC time", m.Created)
	}
	want := archive.Summary{Files: 5, Dirs: 5, Links: 3, Bytes: int64(28 + 18 + len(bigBody) + 3), Hashed: 5}
	if sum != want {
		t.Errorf("summary %+v, want %+v", sum, want)
	}

	rc, err := archive.Data(bytes.NewReader(ar), identity(t, passphrase))
	if err != nil {
		t.Fatal(err)
	}
	got := readTar(t, rc)
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(in) {
		t.Fatalf("Data has %d entries, want %d", len(got), len(in))
	}
	for i := range in {
		in[i].mode &^= 0o6000 // setuid and setgid are dropped
		if got[i] != in[i] {
			t.Errorf("entry %d: got %+.60v, want %+.60v", i, got[i], in[i])
		}
	}
}

func TestWriteSummaryMatchesVerify(t *testing.T) {
	var buf bytes.Buffer
	wsum, err := archive.Write(&buf, manifest(), bytes.NewReader(makeTar(t, boxData())), recipient(t))
	if err != nil {
		t.Fatal(err)
	}
	_, vsum, err := archive.Verify(&buf, identity(t, passphrase))
	if err != nil {
		t.Fatal(err)
	}
	if wsum != vsum {
		t.Errorf("Write summary %+v, Verify summary %+v", wsum, vsum)
	}
}

func TestExtract(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "outside")
	in := append(boxData(), symlink("data/home/agent/out", outside))
	dst := filepath.Join(t.TempDir(), "out")
	m, sum, err := archive.Extract(bytes.NewReader(write(t, in)), dst, identity(t, passphrase))
	if err != nil {
		t.Fatal(err)
	}
	if m.Box != "dev" || sum.Files != 5 || sum.Links != 4 {
		t.Errorf("manifest %+v, summary %+v", m, sum)
	}

	for _, e := range in {
		p := filepath.Join(dst, filepath.FromSlash(e.name))
		fi, err := os.Lstat(p)
		if err != nil {
			t.Error(err)
			continue
		}
		switch e.typ {
		case tar.TypeDir:
			if !fi.IsDir() || fi.Mode().Perm() != os.FileMode(e.mode) {
				t.Errorf("%s: mode %v, want directory %o", e.name, fi.Mode(), e.mode)
			}
		case tar.TypeReg:
			if !fi.Mode().IsRegular() || fi.Mode().Perm() != os.FileMode(e.mode&0o777) {
				t.Errorf("%s: mode %v, want file %o", e.name, fi.Mode(), e.mode&0o777)
			}
			b, err := os.ReadFile(p)
			if err != nil || string(b) != e.body {
				t.Errorf("%s: content differs (%v)", e.name, err)
			}
		case tar.TypeSymlink:
			if fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("%s: mode %v, want a symlink", e.name, fi.Mode())
			}
			if target, err := os.Readlink(p); err != nil || target != e.link {
				t.Errorf("%s: link to %q (%v), want %q", e.name, target, err, e.link)
			}
		case tar.TypeLink:
			orig, err := os.Stat(filepath.Join(dst, filepath.FromSlash(e.link)))
			if err != nil || !os.SameFile(fi, orig) {
				t.Errorf("%s: not a hard link to %s (%v)", e.name, e.link, err)
			}
		}
		if e.typ != tar.TypeSymlink && !fi.ModTime().Equal(mtime) {
			t.Errorf("%s: mtime %v, want %v", e.name, fi.ModTime(), mtime)
		}
	}
	if _, err := os.Lstat(outside); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("symlink target %s was created (%v)", outside, err)
	}
}

func TestExtractIntoExistingEmptyDir(t *testing.T) {
	dst := t.TempDir()
	if _, _, err := archive.Extract(bytes.NewReader(write(t, layout)), dst, identity(t, passphrase)); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dst, "data", "home", "agent")); err != nil || !fi.IsDir() {
		t.Errorf("data/home/agent not extracted: %v", err)
	}
}

func TestExtractRefusesNonEmptyDir(t *testing.T) {
	dst := t.TempDir()
	keep := filepath.Join(dst, "keep")
	if err := os.WriteFile(keep, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := archive.Extract(bytes.NewReader(write(t, layout)), dst, identity(t, passphrase))
	wantErr(t, "Extract", err, "not empty")
	if b, err := os.ReadFile(keep); err != nil || string(b) != "mine" {
		t.Errorf("existing file changed: %q, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(dst, "data")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("data written into a non-empty dir (%v)", err)
	}
}

func TestX25519(t *testing.T) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	other, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := archive.Write(&buf, manifest(), bytes.NewReader(makeTar(t, boxData())), id.Recipient()); err != nil {
		t.Fatal(err)
	}
	ar := buf.Bytes()
	if _, _, err := archive.Verify(bytes.NewReader(ar), other, id); err != nil {
		t.Errorf("Verify: %v", err)
	}
	if err := readData(bytes.NewReader(ar), id); err != nil {
		t.Errorf("Data: %v", err)
	}
	for _, wrong := range []age.Identity{other, identity(t, passphrase)} {
		_, _, err := archive.Verify(bytes.NewReader(ar), wrong)
		if !errors.Is(err, archive.ErrWrongPassphrase) {
			t.Errorf("Verify with a wrong identity: %v, want ErrWrongPassphrase", err)
		}
	}
}

func TestDataCloseEarly(t *testing.T) {
	rc, err := archive.Data(bytes.NewReader(write(t, boxData())), identity(t, passphrase))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Read(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- rc.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
}

// refuseAll checks that Verify, Data and Extract all refuse ar with an error
// containing want, and that Extract leaves nothing behind.
func refuseAll(t *testing.T, ar []byte, id age.Identity, want string) {
	t.Helper()
	_, _, err := archive.Verify(bytes.NewReader(ar), id)
	wantErr(t, "Verify", err, want)
	wantErr(t, "Data", readData(bytes.NewReader(ar), id), want)
	dst := filepath.Join(t.TempDir(), "out")
	_, _, err = archive.Extract(bytes.NewReader(ar), dst, id)
	wantErr(t, "Extract", err, want)
	if _, err := os.Lstat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Extract left %s behind after failing (%v)", dst, err)
	}
}

func TestWrongPassphrase(t *testing.T) {
	ar := write(t, boxData())
	refuseAll(t, ar, identity(t, "wrong"), "wrong passphrase or not encrypted to this identity")
	_, _, err := archive.Verify(bytes.NewReader(ar), identity(t, "wrong"))
	if !errors.Is(err, archive.ErrWrongPassphrase) {
		t.Errorf("error %v does not wrap ErrWrongPassphrase", err)
	}
}

func TestDamaged(t *testing.T) {
	ar := write(t, boxData())
	id := identity(t, passphrase)
	for _, n := range []int{len(ar) - 1, len(ar) - 17, len(ar) / 2, 64*1024 + 300} {
		t.Run("truncated", func(t *testing.T) {
			refuseAll(t, ar[:n], id, "damaged or truncated")
		})
	}
	t.Run("header", func(t *testing.T) {
		_, _, err := archive.Verify(bytes.NewReader(ar[:40]), id)
		wantErr(t, "Verify", err, "decrypting")
		wantErr(t, "Verify", err, "damaged or truncated")
	})
	for _, at := range []int{len(ar) / 2, len(ar) - 5} {
		t.Run("corrupt", func(t *testing.T) {
			bad := bytes.Clone(ar)
			bad[at] ^= 0x20
			refuseAll(t, bad, id, "damaged or truncated")
		})
	}
	t.Run("trailing", func(t *testing.T) {
		refuseAll(t, append(bytes.Clone(ar), 'x'), id, "damaged or truncated")
	})
	t.Run("plaintext trailing", func(t *testing.T) {
		// A good gzip'd tar followed by more, inside the encryption.
		var buf bytes.Buffer
		gz := gzip.NewWriter(&buf)
		gz.Write(makeTar(t, append([]entry{manifestEntry(t, 1, "dev")}, layout...)))
		gz.Close()
		buf.WriteString("junk")
		var enc bytes.Buffer
		w, _ := age.Encrypt(&enc, recipient(t))
		w.Write(buf.Bytes())
		w.Close()
		refuseAll(t, enc.Bytes(), id, "damaged or truncated")
	})
}

func TestManifestRefusals(t *testing.T) {
	id := identity(t, passphrase)
	data := makeTar(t, layout)
	for _, tc := range []struct {
		name string
		tar  []byte
		want string
	}{
		{"empty", makeTar(t, nil), "no manifest.json"},
		{"missing", data, `first entry is "data/", not manifest.json`},
		{"not first", makeTar(t, append(append([]entry{}, layout...), manifestEntry(t, 1, "dev"))),
			`first entry is "data/", not manifest.json`},
		{"format 4", makeTar(t, append([]entry{manifestEntry(t, 4, "dev")}, layout...)), "written by a newer boxes"},
		{"format 2 without hashes", makeTar(t, append([]entry{manifestEntry(t, 2, "dev")}, layout...)), "no content.sha256 entry"},
		{"format 0", makeTar(t, append([]entry{manifestEntry(t, 0, "dev")}, layout...)), "bad format 0"},
		{"no box", makeTar(t, append([]entry{manifestEntry(t, 1, "")}, layout...)), "no box name"},
		{"not json", makeTar(t, append([]entry{file("manifest.json", 0o644, "{")}, layout...)), "manifest.json:"},
		{"manifest dir", makeTar(t, append([]entry{dir("manifest.json", 0o755)}, layout...)), "not a small regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refuseAll(t, seal(t, tc.tar), id, tc.want)
		})
	}
}

func TestEntryRefusals(t *testing.T) {
	id := identity(t, passphrase)
	base := func(more ...entry) []entry { return append(append([]entry{}, layout...), more...) }
	for _, tc := range []struct {
		name    string
		entries []entry
		want    string
	}{
		{"outside", base(file("etc/passwd", 0o644, "x")), `"etc/passwd": outside data/`},
		{"absolute", base(file("/abs", 0o644, "x")), `"/abs": absolute name`},
		{"absolute data", base(file("/data/x", 0o644, "x")), `"/data/x": absolute name`},
		{"dotdot", base(file("data/../x", 0o644, "x")), `"data/../x": name contains ".."`},
		{"dotdot inside", base(file("data/home/../home/y", 0o644, "x")), `name contains ".."`},
		{"duplicate", base(file("data/f", 0o644, "1"), file("data/f", 0o644, "2")), `"data/f": duplicate`},
		{"duplicate cleaned", base(file("data/f", 0o644, "1"), file("data/./f", 0o644, "2")), `"data/./f": duplicate`},
		{"duplicate dir", base(dir("data/home/", 0o755)), `"data/home/": duplicate`},
		{"char device", base(entry{name: "data/null", typ: tar.TypeChar, mode: 0o666}), `"data/null": unsupported entry type (character device)`},
		{"fifo", base(entry{name: "data/p", typ: tar.TypeFifo, mode: 0o644}), "fifo"},
		{"hard link outside", base(hardlink("data/h", "etc/passwd")), `"data/h": hard link to "etc/passwd": outside data/`},
		{"hard link absolute", base(hardlink("data/h", "/etc/passwd")), `hard link to "/etc/passwd": absolute name`},
		{"hard link unknown", base(hardlink("data/h", "data/nope")), `"data/h": hard link to "data/nope", which is not an earlier file`},
		{"hard link later", base(hardlink("data/h", "data/f"), file("data/f", 0o644, "x")), "not an earlier file"},
		{"hard link dir", base(hardlink("data/h", "data/home")), "not an earlier file"},
		{"through symlink", base(symlink("data/x", "/etc"), file("data/x/passwd", 0o644, "x")),
			`"data/x/passwd": goes through symlink data/x`},
		{"through relative symlink", base(symlink("data/h2", "home"), dir("data/h2/agent/", 0o700)),
			"goes through symlink data/h2"},
		{"through file", base(file("data/f", 0o644, "x"), file("data/f/g", 0o644, "y")), "data/f, which is not a directory"},
		{"parent missing", base(file("data/a/b", 0o644, "x")), "its directory data/a/ is not earlier"},
		{"data not dir", []entry{file("data", 0o644, "x")}, "data is not a directory"},
		{"empty symlink", base(symlink("data/s", "")), "symlink with no target"},
		{"no agent", []entry{dir("data/", 0o711), dir("data/home/", 0o711), file("data/home/x", 0o644, "x")},
			"no data/home/agent/ directory"},
		{"no data", nil, "no data/ directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refuseAll(t, sealData(t, tc.entries), id, tc.want)

			var out bytes.Buffer
			_, err := archive.Write(&out, manifest(), bytes.NewReader(makeTar(t, tc.entries)), recipient(t))
			wantErr(t, "Write", err, tc.want)
			if _, _, err := archive.Verify(&out, id); err == nil {
				t.Error("Write failed but wrote a readable archive")
			}
		})
	}
}

func TestWriteRefusesBadInput(t *testing.T) {
	id := identity(t, passphrase)
	for _, tc := range []struct {
		name string
		m    archive.Manifest
		data []byte
		want string
	}{
		{"no box", archive.Manifest{}, makeTar(t, layout), "no box name"},
		{"truncated tar", manifest(), makeTar(t, boxData())[:1000], "reading the data tar"},
		{"not a tar", manifest(), []byte("hello, world"), "reading the data tar"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := archive.Write(&out, tc.m, bytes.NewReader(tc.data), recipient(t))
			wantErr(t, "Write", err, tc.want)
			if _, _, err := archive.Verify(&out, id); err == nil {
				t.Error("Write failed but wrote a readable archive")
			}
		})
	}
}

func TestPassphraseEmpty(t *testing.T) {
	if _, err := archive.PassphraseRecipient(""); err == nil {
		t.Error("PassphraseRecipient accepted an empty passphrase")
	}
	if _, err := archive.PassphraseIdentity(""); err == nil {
		t.Error("PassphraseIdentity accepted an empty passphrase")
	}
}

// SecretOf tells a passphrase's archive from one saved to age keys by the
// header alone, and anything else is unknown: the smolvm tool's OpenPGP
// archives, a file that is not an archive, one cut inside its header, and
// one that is not there.
func TestSecretOf(t *testing.T) {
	key, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	var keyed bytes.Buffer
	if _, err := archive.Write(&keyed, manifest(), bytes.NewReader(makeTar(t, boxData())), key.Recipient()); err != nil {
		t.Fatal(err)
	}
	pass := write(t, boxData())
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		data []byte
		want archive.Secret
	}{
		{"passphrase", pass, archive.SecretPassphrase},
		{"keys", keyed.Bytes(), archive.SecretKeys},
		{"openpgp", []byte{0xc3, 0x2e, 0x04, 0x09, 0x03, 0x08}, archive.SecretUnknown},
		{"text", []byte("hello\n"), archive.SecretUnknown},
		{"cut header", pass[:40], archive.SecretUnknown},
		{"empty", nil, archive.SecretUnknown},
	} {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, c.data, 0o600); err != nil {
			t.Fatal(err)
		}
		if got := archive.SecretOf(path); got != c.want {
			t.Errorf("%s: SecretOf = %d, want %d", c.name, got, c.want)
		}
	}
	if got := archive.SecretOf(filepath.Join(dir, "missing")); got != archive.SecretUnknown {
		t.Errorf("a missing file: SecretOf = %d, want unknown", got)
	}
	// A named pipe with no writer: opened, it would block.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := archive.SecretOf(fifo); got != archive.SecretUnknown {
		t.Errorf("a named pipe: SecretOf = %d, want unknown", got)
	}
}
