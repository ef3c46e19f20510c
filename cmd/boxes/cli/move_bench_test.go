package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/internal/benchtable"
	"github.com/hermes-box/boxes/internal/testhost"
)

// BenchmarkMove moves a box with 200 MiB of random data in /data from the
// local engine to another one (boxes apply, confirmed), against doing the
// same by hand in the same run: boxes save, then boxes load on the other host.
func BenchmarkMove(b *testing.B) {
	const box, hand = "it-h9-bench", "it-h9-hand"
	ref := os.Getenv("BOXES_TEST_IMAGE")
	if ref == "" {
		ref = "hermes-box-lite:test"
	}
	if out, err := exec.Command("docker", "image", "inspect", "-f", "{{.Id}}", ref).CombinedOutput(); err != nil {
		b.Fatalf("test image %s missing (run make test-image): %s", ref, out)
	}
	removeBoxes(box, hand)
	b.Cleanup(func() { removeBoxes(box, hand) })
	remote := testhost.Start(b, testhost.Options{SSH: true, Images: []string{ref}})
	b.Setenv("PATH", remote.SSHPath+string(os.PathListSeparator)+os.Getenv("PATH"))
	b.Setenv(backup.EnvPassphrase, "bench-passphrase")
	dir := b.TempDir()
	config := func(boxes string) {
		text := fmt.Sprintf("version: 1\nfleet: it-h9\nhosts:\n  remote: {docker: %q}\nboxes:\n%s", remote.SSH, boxes)
		if err := os.WriteFile(filepath.Join(dir, "boxes.yaml"), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	run := func(args ...string) time.Duration {
		var out, errb bytes.Buffer
		start := time.Now()
		code := Main(Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, append([]string{"-f", filepath.Join(dir, "boxes.yaml")}, args...))
		took := time.Since(start)
		if code != 0 {
			b.Fatalf("boxes %s: exit %d\n%s\n%s", strings.Join(args, " "), code, out.String(), errb.String())
		}
		return took
	}
	config("  " + box + ": {}\n")
	run("lock", "image", ref)
	run("apply", "--auto-approve")
	run("exec", box, "--", "sh", "-c", "head -c 209715200 /dev/urandom > /data/home/agent/blob")

	file := filepath.Join(dir, "by-hand"+archive.Ext)
	save := run("save", box, "-o", file)
	config("  " + box + ": {}\n  " + hand + ": {host: remote}\n")
	load := run("load", file, hand)

	config("  " + box + ": {host: remote}\n  " + hand + ": {host: remote}\n")
	b.ResetTimer()
	move := run("apply", "--auto-approve", "--confirm-delete", box)
	b.StopTimer()
	b.Logf("move %s; by hand: save %s + load %s", move.Round(time.Millisecond), save.Round(time.Millisecond), load.Round(time.Millisecond))
	benchtable.Report(b, benchtable.Row{
		Figure:   "move of a box with 200 MiB in /data to another host (apply, confirmed)",
		Value:    move.Seconds(),
		Unit:     "s",
		Baseline: "boxes save + boxes load of it on that host by hand",
		Base:     (save + load).Seconds(),
	})
}
