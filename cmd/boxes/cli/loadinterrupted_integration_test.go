package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/backup"
)

// A load interrupted while it restores says so and what the next command
// does, not the engine request that was cut; that command then finishes it.
// Real engine: the interrupted request is the engine's.
func TestIntegrationLoadInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image := testImage(t, "BOXES_TEST_IMAGE", "hermes-box-lite:test")
	const src, dst = "it-intr-src", "it-intr-dst"
	removeBoxes(src, dst)
	t.Cleanup(func() { removeBoxes(src, dst) })
	lowerScryptCost(t)
	t.Setenv(backup.EnvPassphrase, "correct horse battery staple")

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nboxes:\n  "+src+": {}\n  "+dst+": {}\n")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	if r := boxes(t, dir, "apply", "--auto-approve", "--target", src); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	if r := boxes(t, dir, "exec", src, "--", "sh", "-c", "head -c 20000000 /dev/urandom > blob && echo kept > note"); r.code != 0 {
		t.Fatalf("writing data: %+v", r)
	}
	file := filepath.Join(t.TempDir(), src+archive.Ext)
	if r := boxes(t, dir, "save", src, "-o", file); r.code != 0 {
		t.Fatalf("save: %+v", r)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &onLine{marker: "restoring /data", fn: cancel}
	var stdout bytes.Buffer
	code := MainContext(ctx, Streams{In: strings.NewReader(""), Out: &stdout, Err: stderr}, []string{"-f", filepath.Join(dir, "boxes.yaml"), "load", file, dst})
	got := stderr.buf.String()
	if code == 0 || !strings.Contains(got, "boxes: error: load of "+dst+" interrupted") || strings.Contains(got, "%2F") || strings.Contains(got, "http://") {
		t.Errorf("interrupted load: exit %d\n%s", code, got)
	}
	if strings.Contains(got, "incomplete") && !strings.Contains(got, "boxes: hint: boxes load "+file+" "+dst+" finishes it from the same archive") {
		t.Errorf("interrupted restore without its next command:\n%s", got)
	}
	if strings.Contains(got, "incomplete") {
		if r := boxes(t, dir, "ls"); !strings.Contains(r.stdout, "restore incomplete") {
			t.Errorf("ls of a box whose restore was cut short:\n%s", r.stdout)
		}
	}
	if r := boxes(t, dir, "load", file, dst); r.code != 0 {
		t.Fatalf("load after the interrupted one: %+v", r)
	}
	if r := boxes(t, dir, "exec", dst, "--", "cat", "note"); r.stdout != "kept\n" {
		t.Errorf("loaded box's note: %+v", r)
	}
}
