package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/compose"
)

// lowerScryptCost makes passphrase archives cheap to write for the test.
func lowerScryptCost(t *testing.T) {
	old := archive.ScryptWorkFactor
	archive.ScryptWorkFactor = 10
	t.Cleanup(func() { archive.ScryptWorkFactor = old })
}

// TestIntegrationSaveLoadExtract: save (right after apply too), extract,
// load (of a running and of a stopped box), restore: in boxes.yaml, their
// --json results and refusals, and archives for recipients read with an
// identity. Real engine: the archive is streamed from a real /data while
// hb freezes the box, and load and restore write it into new volumes the
// box then reads.
func TestIntegrationSaveLoadExtract(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image := testImage(t, "BOXES_TEST_IMAGE", "hermes-box-lite:test")
	const src, dst, dstStopped, never, seeded = "it-save", "it-load", "it-load-off", "it-load-never", "it-restore"
	all := []string{src, dst, dstStopped, never, seeded}
	removeBoxes(all...)
	t.Cleanup(func() { removeBoxes(all...) })
	lowerScryptCost(t)

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nboxes:\n  "+src+": {}\n  "+dst+": {}\n  "+dstStopped+": {state: stopped}\n  "+never+": {}\n")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	if r := boxes(t, dir, "apply", "--auto-approve", "--target", src); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	t.Setenv(backup.EnvPassphrase, "correct horse battery staple")
	// Right after apply hb init may still run: save waits for it, and the
	// box keeps running, resumed.
	early := filepath.Join(t.TempDir(), "early"+archive.Ext)
	r := boxes(t, dir, "save", src, "-o", early, "--json")
	if r.code != 0 {
		t.Fatalf("save right after apply: %+v", r)
	}
	if res := decodeResult(t, r); res.Box != src || res.Archive != early || !res.Verified || res.SHA256 != fileSHA256(t, early) ||
		res.ArchiveBytes != fileSize(t, early) || res.Files == nil || *res.Files == 0 || res.State != "" {
		t.Errorf("save --json: %+v", res)
	}
	if state := dockerOut(t, "inspect", "-f", "{{.State.Status}} {{.RestartCount}}", compose.ContainerName(src, compose.AgentService)); state != "running 0" {
		t.Errorf("agent after an early save: %s", state)
	}
	marker := "saved at " + t.Name()
	if r := boxes(t, dir, "exec", src, "--", "sh", "-c", "mkdir -p notes && echo '"+marker+"' > notes/marker && ln -s notes/marker link"); r.code != 0 {
		t.Fatalf("writing the marker: %+v", r)
	}
	t.Setenv(backup.EnvPassphrase, "correct horse battery staple")

	// save: a verified archive under backups/, the box resumed.
	r = boxes(t, dir, "save", src)
	if r.code != 0 || !strings.Contains(r.stdout, "verified") {
		t.Fatalf("save: %+v", r)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "backups"))
	if len(entries) != 1 || !regexp.MustCompile(`^it-save-\d{8}-\d{6}\.tar\.s2\.age$`).MatchString(entries[0].Name()) {
		t.Fatalf("backups/ holds %v", entries)
	}
	file := filepath.Join(dir, "backups", entries[0].Name())
	if info, _ := os.Stat(file); info.Mode().Perm() != 0o600 {
		t.Errorf("archive mode %v, want 0600", info.Mode().Perm())
	}
	if r := boxes(t, dir, "exec", "-u", "root", src, "--", "sh", "-c", "test ! -e /data/.hb/quiesced && ps -o stat= -u agent | grep -c T || true"); strings.TrimSpace(r.stdout) != "0" {
		t.Errorf("the box was not resumed after save: %+v", r)
	}
	if r := boxes(t, dir, "ls"); !strings.Contains(r.stdout, entries[0].Name()) {
		t.Errorf("ls does not show the backup:\n%s", r.stdout)
	}
	if r := boxes(t, dir, "save", src, "-o", file); r.code != 1 || !strings.Contains(r.stderr, "exists; save never overwrites an archive") {
		t.Errorf("save over an archive: %+v", r)
	}

	// extract: no Docker needed; the data as saved.
	out := filepath.Join(t.TempDir(), "x")
	if r := boxes(t, dir, "extract", file, out); r.code != 0 || !strings.Contains(r.stdout, "box "+src) {
		t.Fatalf("extract: %+v", r)
	}
	if got := readFile(t, filepath.Join(out, "data", "home", "agent", "notes", "marker")); got != marker+"\n" {
		t.Errorf("extracted marker %q", got)
	}
	if target, err := os.Readlink(filepath.Join(out, "data", "home", "agent", "link")); err != nil || target != "notes/marker" {
		t.Errorf("extracted link: %q %v", target, err)
	}

	// load: a new box with the data, a fresh token, healthy.
	r = boxes(t, dir, "load", file, dst)
	if r.code != 0 || !strings.Contains(r.stdout, "box "+dst+" is healthy") || !strings.Contains(r.stdout, "loaded "+dst) {
		t.Fatalf("load: %+v", r)
	}
	if r := boxes(t, dir, "exec", dst, "--", "cat", "notes/marker"); r.stdout != marker+"\n" {
		t.Errorf("loaded box's marker: %+v", r)
	}
	if readFile(t, filepath.Join(dir, ".boxes", "secrets", dst+".env")) == readFile(t, filepath.Join(dir, ".boxes", "secrets", src+".env")) {
		t.Error("the loaded box has the saved box's token")
	}
	if r := boxes(t, dir, "plan", "--target", dst, "--detailed-exitcode"); r.code != 0 {
		t.Errorf("plan after load: %+v", r)
	}
	// A box declared stopped is loaded, checked, and stopped again.
	r = boxes(t, dir, "load", file, dstStopped, "--json")
	if r.code != 0 {
		t.Fatalf("load of a stopped box: %+v", r)
	}
	if res := decodeResult(t, r); res.Box != dstStopped || res.State != "stopped" || res.Archive != file || res.Doctor == nil || !res.Doctor.OK {
		t.Errorf("load --json: %+v", res)
	}
	if state := dockerOut(t, "inspect", "-f", "{{.State.Status}}", compose.ContainerName(dstStopped, compose.AgentService)); state != "exited" {
		t.Errorf("stopped box after load: %s", state)
	}

	// restore: in boxes.yaml seeds a box apply creates: wrong passphrase
	// first (nothing changes), then the right one.
	// Without the fleet line writeFile put last, so that the box goes under boxes:.
	yaml := strings.TrimSuffix(readFile(t, filepath.Join(dir, "boxes.yaml")), "fleet: "+fleetName("it")+"\n")
	writeFile(t, filepath.Join(dir, "boxes.yaml"), yaml+"  "+seeded+": {state: stopped, restore: backups/"+entries[0].Name()+"}\n")
	t.Setenv(backup.EnvPassphrase, "wrong")
	if r := boxes(t, dir, "apply", "--auto-approve", "--target", seeded); r.code != 1 || !strings.Contains(r.stderr, "wrong passphrase") || !strings.Contains(r.stderr, "box "+seeded+": restore:") {
		t.Errorf("apply with a wrong passphrase: %+v", r)
	}
	if ids := dockerOut(t, "ps", "-aq", "--filter", "label="+compose.BoxLabel+"="+seeded); ids != "" {
		t.Errorf("apply with a wrong passphrase created containers: %s", ids)
	}
	t.Setenv(backup.EnvPassphrase, "correct horse battery staple")
	if r := boxes(t, dir, "plan", "--target", seeded); !strings.Contains(r.stdout, "restore") {
		t.Errorf("plan does not show the restore: %+v", r)
	}
	if r := boxes(t, dir, "apply", "--auto-approve", "--target", seeded); r.code != 0 || !strings.Contains(r.stdout, "restoring /data") {
		t.Fatalf("apply with restore: %+v", r)
	}
	if r := boxes(t, dir, "plan", "--target", seeded, "--detailed-exitcode"); r.code != 0 {
		t.Errorf("plan after the restoring apply: %+v", r)
	}
	if r := boxes(t, dir, "start", seeded); r.code != 0 {
		t.Fatalf("start: %+v", r)
	}
	if r := boxes(t, dir, "exec", seeded, "--", "cat", "notes/marker"); r.stdout != marker+"\n" {
		t.Errorf("restored box's marker: %+v", r)
	}

	// Refusals: each says why and creates nothing.
	corrupt := filepath.Join(t.TempDir(), "corrupt"+".tar.gz.age")
	data := []byte(readFile(t, file))
	writeFile(t, corrupt, string(data[:len(data)/2]))
	for name, tc := range map[string]struct {
		args []string
		pass string
		want string
	}{
		"load over an existing box": {[]string{"load", file, dst}, "", "box " + dst + " already exists"},
		"load an undeclared box":    {[]string{"load", file, "it-nope"}, "", `no box "it-nope" in `},
		"wrong passphrase":          {[]string{"load", file, never}, "wrong", "passphrase"},
		"truncated archive":         {[]string{"load", corrupt, never}, "", "nothing was created"},
		"not an archive":            {[]string{"load", filepath.Join(dir, "boxes.yaml"), never}, "", "is not a boxes archive"},
		"extract, wrong passphrase": {[]string{"extract", file, filepath.Join(t.TempDir(), "y")}, "wrong", "passphrase"},
		"extract into a full dir":   {[]string{"extract", file, out}, "", "not empty"},
	} {
		if tc.pass != "" {
			t.Setenv(backup.EnvPassphrase, tc.pass)
		} else {
			t.Setenv(backup.EnvPassphrase, "correct horse battery staple")
		}
		r := boxes(t, dir, tc.args...)
		if r.code != 1 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%s: exit %d, want 1 and %q:\n%s", name, r.code, tc.want, r.stderr)
		}
	}
	if ids := dockerOut(t, "ps", "-aq", "--filter", "label="+compose.BoxLabel+"="+never); ids != "" {
		t.Errorf("a refused load created containers: %s", ids)
	}
	if ids := dockerOut(t, "volume", "ls", "-q", "--filter", "label="+compose.BoxLabel+"="+never); ids != "" {
		t.Errorf("a refused load created volumes: %s", ids)
	}
	if _, err := os.Stat(filepath.Join(dir, ".boxes", "secrets", never+".env")); err == nil {
		t.Error("a refused load stored a token")
	}
	// Saved to boxes.yaml's recipients: read with the identity, not a passphrase.
	key, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	keyDir := t.TempDir()
	writeFile(t, filepath.Join(keyDir, "boxes.yaml"), "version: 1\narchive:\n  recipients: ["+key.Recipient().String()+"]\nboxes:\n  "+src+": {}\n")
	writeFile(t, filepath.Join(keyDir, "key.txt"), key.String()+"\n")
	sealed := filepath.Join(keyDir, "sealed"+archive.Ext)
	if r := boxes(t, keyDir, "save", src, "-o", sealed); r.code != 0 {
		t.Fatalf("save to recipients: %+v", r)
	}
	// A passphrase set does not open it, nor is it tried: the refusal says
	// what would.
	if r := boxes(t, keyDir, "extract", sealed, filepath.Join(keyDir, "with-pass")); r.code != 1 || !strings.Contains(r.stderr, "it is saved to age keys, not to a passphrase, and BOXES_IDENTITY is not set") {
		t.Errorf("extract of a recipients archive with a passphrase: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(keyDir, "with-pass")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused extract made its directory: %v", err)
	}
	t.Setenv(backup.EnvIdentity, filepath.Join(keyDir, "key.txt"))
	if r := boxes(t, keyDir, "extract", sealed, filepath.Join(keyDir, "with-key")); r.code != 0 {
		t.Errorf("extract with the identity: %+v", r)
	}
	if got := readFile(t, filepath.Join(keyDir, "with-key", "data", "home", "agent", "notes", "marker")); got != marker+"\n" {
		t.Errorf("marker from the recipients archive: %q", got)
	}
	os.Unsetenv(backup.EnvIdentity)

	os.Unsetenv(backup.EnvPassphrase)
	if r := boxes(t, dir, "save", src); r.code != 1 || !strings.Contains(r.stderr, "no passphrase: "+backup.EnvPassphrase+" is not set") {
		t.Errorf("save without a passphrase: %+v", r)
	}
}
