package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/backup"
)

// A box loaded from an archive made exactly as the smolvm tool made it: the
// data restored under /data, the old markers left out, the runtime versions
// shown, and hb init's layout (~/workspace included) in place. Real
// engine: the archive is restored into a real volume, and the versions and
// the layout are read from real containers.
func TestIntegrationLoadSmolvmArchive(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image := testImage(t, "BOXES_TEST_IMAGE", "hermes-box-lite:test")
	const name = "it-smolvm"
	removeBoxes(name)
	t.Cleanup(func() { removeBoxes(name) })

	file := smolvmArchive(t, "old secret")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nboxes:\n  "+name+": {}\n")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	t.Setenv(backup.EnvPassphrase, "")
	t.Setenv(backup.EnvOldPassphrase, "wrong")
	if r := boxes(t, dir, "load", file, name); r.code != 1 || !strings.Contains(r.stderr, "wrong passphrase") || !strings.Contains(r.stderr, "nothing was created") {
		t.Errorf("load with a wrong passphrase: %+v", r)
	}
	t.Setenv(backup.EnvOldPassphrase, "old secret")
	r := boxes(t, dir, "load", file, name)
	if r.code != 0 {
		t.Fatalf("load: %+v", r)
	}
	if !strings.Contains(r.stderr, "claude=1.0.30 (Claude Code)") {
		t.Errorf("load did not show the runtime versions: %s", r.stderr)
	}
	r = boxes(t, dir, "exec", name, "--", "sh", "-c",
		"cat ~/workspace/app/main.go; test -e ~/.config/hermes-box/quiesced && echo MARKER; stat -c '%U %a' ~/workspace; test -e /data/.hb/quiesced && echo QUIESCED; true")
	if want := "package main\nagent 755\n"; r.code != 0 || r.stdout != want {
		t.Errorf("after load: %+v, want stdout %q", r, want)
	}
	_ = os.Remove(file)
}
