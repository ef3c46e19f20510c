package archive_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"filippo.io/age"

	"github.com/hermes-box/boxes/archive"
)

// needTools skips the test when a command the smolvm tool used is missing.
func needTools(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			t.Skipf("%s is not installed", n)
		}
	}
}

// gpgHome is one GNUPGHOME for the whole test binary, so gpg starts its
// agent once; TestMain stops it.
var gpgHome struct {
	sync.Once
	dir string
	err error
}

func sharedGPGHome(t *testing.T) string {
	t.Helper()
	gpgHome.Do(func() { gpgHome.dir, gpgHome.err = os.MkdirTemp("", "boxes-gpg-") })
	if gpgHome.err != nil {
		t.Fatal(gpgHome.err)
	}
	return gpgHome.dir
}

// stopGPG stops the agent of the shared GNUPGHOME and removes it.
func stopGPG() {
	if gpgHome.dir != "" {
		exec.Command("gpgconf", "--homedir", gpgHome.dir, "--kill", "gpg-agent").Run()
		os.RemoveAll(gpgHome.dir)
	}
}

// gpgSymmetric encrypts plain exactly as the smolvm tool did: gpg --symmetric
// with AES256, the passphrase on fd 3.
func gpgSymmetric(t *testing.T, plain []byte, pass string) []byte {
	t.Helper()
	needTools(t, "gpg")
	home := sharedGPGHome(t)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	go func() {
		pw.WriteString(pass + "\n")
		pw.Close()
	}()
	cmd := exec.Command("gpg", "--batch", "--yes", "--pinentry-mode", "loopback", "--passphrase-fd", "3",
		"--symmetric", "--cipher-algo", "AES256")
	cmd.Env = append(os.Environ(), "GNUPGHOME="+home)
	cmd.ExtraFiles = []*os.File{pr}
	cmd.Stdin = bytes.NewReader(plain)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("gpg: %v: %s", err, errb.String())
	}
	return out.Bytes()
}

// legacyTree makes a /data as the smolvm tool's boxes had it.
func legacyTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	long := strings.Repeat("deep-directory-name/", 8) + strings.Repeat("f", 120)
	files := map[string]string{
		"home/agent/.bashrc": "export PATH=$HOME/bin:$PATH\n",
		"home/agent/.config/hermes-box/runtime-manifest": "# written by smolvm\ncreated_at=2026-06-25T12:00:00Z\n" +
			"node=v22.11.0\nclaude=1.0.30 (Claude Code)\ncodex=codex-cli 0.20.0\nhermes=hermes 0.3.1\nexecutor=1.2.3\nnote=a=b\n",
		"home/agent/.config/hermes-box/quiesced":    "2026-06-25T12:00:00Z\n",
		"home/agent/.config/hermes-box/gateway.pid": "1234\n",
		"home/agent/.hermes/state.db":               "SQLite format 3\x00",
		"home/agent/.hermes/state.db-wal":           "wal",
		"home/agent/.hermes/state.db-shm":           "shm",
		"home/agent/workspace/" + long:              "long name\n",
		"home/agent/big":                            bigBody,
	}
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("big", filepath.Join(root, "home/agent/big-link")); err != nil {
		t.Fatal(err)
	}
	return root
}

// legacyArchive runs `tar czf - -C DATA . | gpg …` as the smolvm tool did.
func legacyArchive(t *testing.T, data, pass string) []byte {
	t.Helper()
	needTools(t, "tar", "gpg")
	out, err := exec.Command("tar", "czf", "-", "-C", data, ".").Output()
	if err != nil {
		t.Fatalf("tar: %v", err)
	}
	return gpgSymmetric(t, out, pass)
}

// legacyOf encrypts a tar of entries, gzip'd, as the smolvm tool's archive.
func legacyOf(t *testing.T, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	gz.Write(makeTar(t, entries))
	gz.Close()
	return gpgSymmetric(t, buf.Bytes(), passphrase)
}

func TestLegacyRead(t *testing.T) {
	ar := legacyArchive(t, legacyTree(t), passphrase)
	id := identity(t, passphrase)

	m, sum, err := archive.Verify(bytes.NewReader(ar), id)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Legacy() || m.Writer != "smolvm" {
		t.Errorf("manifest %+v, want a legacy one", m)
	}
	if m.Created.Format("2006-01-02T15:04:05Z") != "2026-06-25T12:00:00Z" {
		t.Errorf("created %v", m.Created)
	}
	for k, v := range map[string]string{"node": "v22.11.0", "claude": "1.0.30 (Claude Code)", "codex": "codex-cli 0.20.0", "note": "a=b"} {
		if m.Tools[k] != v {
			t.Errorf("tool %s: %q, want %q", k, m.Tools[k], v)
		}
	}
	if sum.Dropped != 2 || sum.Files != 7 || sum.Links != 1 {
		t.Errorf("summary %+v, want 7 files, 1 link, 2 markers dropped", sum)
	}

	rc, err := archive.Data(bytes.NewReader(ar), id)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatal(err)
			}
			break
		}
		names[h.Name] = true
	}
	rc.Close()
	for _, want := range []string{"data/", "data/home/agent/", "data/home/agent/.hermes/state.db-wal",
		"data/home/agent/.hermes/state.db-shm", "data/home/agent/.config/hermes-box/runtime-manifest"} {
		if !names[want] {
			t.Errorf("Data lacks %s", want)
		}
	}
	for _, gone := range []string{"data/home/agent/.config/hermes-box/quiesced", "data/home/agent/.config/hermes-box/gateway.pid"} {
		if names[gone] {
			t.Errorf("Data keeps the marker %s", gone)
		}
	}
}

func TestLegacyExtract(t *testing.T) {
	src := legacyTree(t)
	ar := legacyArchive(t, src, passphrase)
	file := filepath.Join(t.TempDir(), "alpha-20260625-120000"+archive.ExtLegacy)
	if err := os.WriteFile(file, ar, 0o600); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "out")
	m, _, err := archive.ExtractFile(file, dst, archive.ExtractOptions{Options: archive.Options{Identities: ids(t, passphrase)}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Box != "alpha" {
		t.Errorf("box %q, want alpha from the file name", m.Box)
	}
	long := strings.Repeat("deep-directory-name/", 8) + strings.Repeat("f", 120)
	b, err := os.ReadFile(filepath.Join(dst, "data/home/agent/workspace", long))
	if err != nil || string(b) != "long name\n" {
		t.Errorf("GNU long name: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "data/home/agent/big")); err != nil || string(b) != bigBody {
		t.Errorf("big file differs (%v)", err)
	}
	if _, err := os.Lstat(filepath.Join(dst, "data/home/agent/.config/hermes-box/quiesced")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the quiesce marker was extracted (%v)", err)
	}
}

func ids(t *testing.T, p string) []ageIdentity { return []ageIdentity{identity(t, p)} }

// refuseLegacy checks that Verify, Data, Extract and ExtractFile refuse ar
// with an error containing want, and that nothing is left written.
func refuseLegacy(t *testing.T, ar []byte, pass, want string) {
	t.Helper()
	refuseAll(t, ar, identity(t, pass), want)
	refuseLegacyFile(t, ar, pass, want)
}

// refuseLegacyFile checks that ExtractFile refuses ar with an error
// containing want, and writes nothing.
func refuseLegacyFile(t *testing.T, ar []byte, pass, want string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "a-20260625-120000"+archive.ExtLegacy)
	if err := os.WriteFile(file, ar, 0o600); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "out")
	_, _, err := archive.ExtractFile(file, dst, archive.ExtractOptions{Options: archive.Options{Identities: ids(t, pass)}})
	wantErr(t, "ExtractFile", err, want)
	if _, err := os.Lstat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ExtractFile wrote %s before refusing (%v)", dst, err)
	}
}

func TestLegacyRefusals(t *testing.T) {
	ar := legacyArchive(t, legacyTree(t), passphrase)
	t.Run("wrong passphrase", func(t *testing.T) {
		refuseLegacy(t, ar, "wrong", "wrong passphrase")
		_, _, err := archive.Verify(bytes.NewReader(ar), identity(t, "wrong"))
		if !errors.Is(err, archive.ErrWrongPassphrase) {
			t.Errorf("%v does not wrap ErrWrongPassphrase", err)
		}
	})
	t.Run("flipped byte", func(t *testing.T) {
		bad := bytes.Clone(ar)
		bad[len(bad)/2] ^= 0x01
		refuseLegacy(t, bad, passphrase, "archive:")
	})
	t.Run("flipped last byte", func(t *testing.T) {
		bad := bytes.Clone(ar)
		bad[len(bad)-1] ^= 0x01
		refuseLegacy(t, bad, passphrase, "integrity check failed")
	})
	for _, n := range []int{len(ar) - 1, len(ar) / 2, 100} {
		t.Run("truncated", func(t *testing.T) {
			refuseLegacy(t, ar[:n], passphrase, "archive:")
		})
	}
	t.Run("age identity", func(t *testing.T) {
		_, _, err := archive.Verify(bytes.NewReader(ar), x25519(t))
		wantErr(t, "Verify", err, "opens with a passphrase")
	})

	root := []entry{dir("./", 0o755), dir("./home/", 0o755), dir("./home/agent/", 0o700)}
	for _, tc := range []struct {
		name    string
		entries []entry
		want    string
	}{
		{"dotdot", append(root, file("../evil", 0o644, "x")), `"../evil": name contains ".."`},
		{"dotdot inside", append(root, file("./home/../../evil", 0o644, "x")), `name contains ".."`},
		{"absolute", append(root, file("/etc/cron.d/evil", 0o644, "x")), `"/etc/cron.d/evil": absolute name`},
		{"hard link out", append(root, hardlink("./home/agent/h", "/etc/shadow")), `"./home/agent/h": hard link to "/etc/shadow": absolute name`},
		{"hard link up", append(root, hardlink("./home/agent/h", "home/../../etc/shadow")), `"./home/agent/h": hard link to "home/../../etc/shadow": name contains ".."`},
		{"through symlink", append(root, symlink("./home/agent/etc", "/etc"), file("./home/agent/etc/passwd", 0o644, "x")), "goes through symlink"},
		{"no home", []entry{dir("./", 0o755), file("./x", 0o644, "x")}, "not a box's data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The walker is the one of Data and Extract too (TestEntryRefusals).
			refuseLegacyFile(t, legacyOf(t, tc.entries), passphrase, tc.want)
		})
	}
}

func TestParseRuntimeManifest(t *testing.T) {
	got := archive.ParseRuntimeManifest([]byte("# c\n\ncreated_at=2026-06-25 12:00:00\nclaude=1.0 (Claude Code)\r\nodd\nk=v=w\n =x\n"))
	want := map[string]string{"created_at": "2026-06-25 12:00:00", "claude": "1.0 (Claude Code)", "k": "v=w"}
	if len(got) != len(want) {
		t.Errorf("got %q, want %q", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
}

type ageIdentity = age.Identity

func x25519(t *testing.T) age.Identity {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// A load reads its archive three times (manifest, whole check, restore):
// the passphrase's key is derived once for them all, and a wrong
// passphrase is still refused, with its own derivation.
func TestLegacyKeyDerivedOnce(t *testing.T) {
	ar := legacyArchive(t, legacyTree(t), passphrase)
	file := filepath.Join(t.TempDir(), "alpha-20260625-120000"+archive.ExtLegacy)
	if err := os.WriteFile(file, ar, 0o600); err != nil {
		t.Fatal(err)
	}
	before := archive.LegacyDerivations()
	if _, _, err := archive.Verify(bytes.NewReader(ar), identity(t, passphrase)); err != nil {
		t.Fatal(err)
	}
	rc, err := archive.Data(bytes.NewReader(ar), identity(t, passphrase))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, rc); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if _, _, err := archive.ExtractFile(file, filepath.Join(t.TempDir(), "out"), archive.ExtractOptions{Options: archive.Options{Identities: ids(t, passphrase)}}); err != nil {
		t.Fatal(err)
	}
	if n := archive.LegacyDerivations() - before; n != 1 {
		t.Errorf("three reads derived the key %d times, want once", n)
	}
	before = archive.LegacyDerivations()
	for range 2 {
		if _, _, err := archive.Verify(bytes.NewReader(ar), identity(t, "wrong")); !errors.Is(err, archive.ErrWrongPassphrase) {
			t.Errorf("a wrong passphrase: %v", err)
		}
	}
	if n := archive.LegacyDerivations() - before; n != 1 {
		t.Errorf("a wrong passphrase twice derived %d keys, want 1", n)
	}
}
