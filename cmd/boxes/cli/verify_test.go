package cli

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/backup"
)

// runBoxes runs boxes in-process with no terminal.
func runBoxes(t *testing.T, args ...string) run {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, append([]string{"-f", filepath.Join(t.TempDir(), "boxes.yaml")}, args...))
	return run{code, out.String(), errb.String()}
}

// boxArchive writes a small box archive with passphrase p to dir.
func boxArchive(t *testing.T, dir, p string) string {
	t.Helper()
	path := filepath.Join(dir, "alpha-20261202-101500"+archive.Ext)
	if err := os.WriteFile(path, archiveOf(t, p, "notes", bytes.Repeat([]byte("all work and no play\n"), 20000)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// archiveOf is a box archive of alpha with passphrase p whose data holds
// one file, home/agent/name, of body.
func archiveOf(t *testing.T, p, name string, body []byte) []byte {
	t.Helper()
	var data bytes.Buffer
	tw := tar.NewWriter(&data)
	for _, d := range []string{"data/", "data/home/", "data/home/agent/"} {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755})
	}
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "data/home/agent/" + name, Mode: 0o644, Size: int64(len(body))})
	tw.Write(body)
	tw.Close()
	lowerScryptCost(t)
	r, err := archive.PassphraseRecipient(p)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := archive.Write(&out, archive.Manifest{Box: "alpha"}, &data, r); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// flipMiddle writes a copy of file with its middle byte flipped.
func flipMiddle(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x10
	bad := filepath.Join(t.TempDir(), filepath.Base(file))
	if err := os.WriteFile(bad, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return bad
}

func TestVerifyCommand(t *testing.T) {
	t.Setenv(backup.EnvPassphrase, "pw")
	file := boxArchive(t, t.TempDir(), "pw")

	r := runBoxes(t, "verify", file)
	if r.code != 0 || !strings.Contains(r.stdout, "verified") || !strings.Contains(r.stdout, "box alpha, format 3") ||
		!strings.Contains(r.stdout, "1 content hash checked") {
		t.Errorf("verify: %+v", r)
	}
	if !strings.Contains(r.stderr, "verifying: ") {
		t.Errorf("verify printed no progress: %q", r.stderr)
	}

	r = runBoxes(t, "verify", "--json", file)
	var rep archive.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 || !rep.OK || rep.Hashed != 1 || rep.Box != "alpha" || rep.Format != 3 {
		t.Errorf("verify --json: %+v (%v): %+v", r, err, rep)
	}

	r = runBoxes(t, "verify", flipMiddle(t, file))
	if r.code != 1 || !strings.Contains(r.stderr, "damaged or truncated") {
		t.Errorf("verify of a flipped byte: %+v", r)
	}
	r = runBoxes(t, "verify", "--json", flipMiddle(t, file))
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 1 || rep.OK || !strings.Contains(rep.Error, "damaged") {
		t.Errorf("verify --json of a flipped byte: %+v", r)
	}

	t.Setenv(backup.EnvPassphrase, "wrong")
	if r := runBoxes(t, "verify", file); r.code != 1 || !strings.Contains(r.stderr, "wrong passphrase") {
		t.Errorf("verify with a wrong passphrase: %+v", r)
	}
	if r := runBoxes(t, "verify", filepath.Join(t.TempDir(), "x.zip")); r.code != 1 {
		t.Errorf("verify of a missing file: %+v", r)
	}
}

// smolvmArchive makes an archive exactly as the smolvm tool did.
func smolvmArchive(t *testing.T, pass string) string {
	t.Helper()
	for _, c := range []string{"tar", "gpg"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s is not installed", c)
		}
	}
	data := t.TempDir()
	for name, body := range map[string]string{
		"home/agent/.bashrc":                             "# mine\n",
		"home/agent/.config/hermes-box/runtime-manifest": "created_at=2026-06-25T12:00:00Z\nclaude=1.0.30 (Claude Code)\nnode=v22.11.0\n",
		"home/agent/.config/hermes-box/quiesced":         "x\n",
		"home/agent/workspace/app/main.go":               "package main\n",
	} {
		p := filepath.Join(data, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	// The old tool's agent was uid 1000, as the box's is.
	if os.Getuid() == 0 {
		filepath.Walk(filepath.Join(data, "home/agent"), func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 1000, 1000) })
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "alpha-20260625-120000"+archive.ExtLegacy)
	passFile := filepath.Join(dir, "pass")
	os.WriteFile(passFile, []byte(pass+"\n"), 0o600)
	cmd := exec.Command("sh", "-c", `tar czf - -C "$1" . | gpg --batch --yes --pinentry-mode loopback --passphrase-fd 3 --symmetric --cipher-algo AES256 3<"$2" >"$3"`,
		"sh", data, passFile, file)
	cmd.Env = append(os.Environ(), "GNUPGHOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("making the archive: %v: %s", err, out)
	}
	t.Cleanup(func() {
		exec.Command("gpgconf", "--homedir", cmd.Env[len(cmd.Env)-1][len("GNUPGHOME="):], "--kill", "gpg-agent").Run()
	})
	return file
}

func TestVerifyAndExtractSmolvmArchive(t *testing.T) {
	file := smolvmArchive(t, "old secret")
	passFile := filepath.Join(t.TempDir(), "p")
	os.WriteFile(passFile, []byte("old secret\n"), 0o600)
	t.Setenv(backup.EnvPassphrase, "")
	t.Setenv(backup.EnvOldPassphrase, "")
	t.Setenv(backup.EnvOldPassphraseFile, passFile)

	r := runBoxes(t, "verify", file)
	if r.code != 0 || !strings.Contains(r.stdout, "smolvm tool") || !strings.Contains(r.stdout, "claude=1.0.30 (Claude Code)") ||
		!strings.Contains(r.stdout, "1 marker of the smolvm tool") {
		t.Errorf("verify: %+v", r)
	}
	r = runBoxes(t, "verify", flipMiddle(t, file))
	if r.code != 1 || !strings.Contains(r.stderr, "archive:") {
		t.Errorf("verify of a flipped byte: %+v", r)
	}

	out := filepath.Join(t.TempDir(), "x")
	if r := runBoxes(t, "extract", file, out); r.code != 0 {
		t.Fatalf("extract: %+v", r)
	}
	if b, err := os.ReadFile(filepath.Join(out, "data/home/agent/workspace/app/main.go")); err != nil || string(b) != "package main\n" {
		t.Errorf("extracted file: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(out, "data/home/agent/.config/hermes-box/quiesced")); err == nil {
		t.Error("the smolvm quiesce marker was extracted")
	}

	t.Setenv(backup.EnvOldPassphraseFile, "")
	t.Setenv(backup.EnvOldPassphrase, "wrong")
	out = filepath.Join(t.TempDir(), "y")
	if r := runBoxes(t, "extract", file, out); r.code != 1 || !strings.Contains(r.stderr, "wrong passphrase") {
		t.Errorf("extract with a wrong passphrase: %+v", r)
	}
	if _, err := os.Lstat(out); err == nil {
		t.Error("extract with a wrong passphrase wrote its directory")
	}
}
