package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/internal/benchtable"
)

// BenchmarkSnapshot measures boxes snapshot of a running box holding
// 200 MiB of random data in /data (the whole command: the box quiesced and
// paused, measured, copied by a helper container, resumed; median of 5)
// against a plain copy of the same volume into a new one by a helper
// container on the same engine (docker run cp -a, median of 5); and the
// apply of a fork of that snapshot against a new box's and that copy.
func BenchmarkSnapshot(b *testing.B) {
	image := realEngineBench(b)
	const box = "it-bench-snap"
	copies := []string{box + "-copy1", box + "-copy2", box + "-copy3", box + "-copy4", box + "-copy5"}
	cleanup := func() {
		removeBoxes(box)
		for _, v := range copies {
			removeBoxes(v) // a fork or a new box below
			_ = exec.Command("docker", "volume", "rm", "-f", v).Run()
		}
	}
	cleanup()
	b.Cleanup(cleanup)
	bin := benchBinary(b)
	dir := b.TempDir()
	config := filepath.Join(dir, "boxes.yaml")
	if err := os.WriteFile(config, []byte("version: 1\nfleet: it\nboxes:\n  "+box+": {}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	run := func(name string, args ...string) time.Duration {
		b.Helper()
		start := time.Now()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			b.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return time.Since(start)
	}
	run(bin, "-f", config, "lock", "image", image)
	run(bin, "-f", config, "apply", "--auto-approve")
	agent := compose.ContainerName(box, compose.AgentService)
	run("docker", "exec", "-u", "agent", agent, "sh", "-c", "head -c 209715200 /dev/urandom > /data/home/agent/blob")

	// Each copy is timed from a synced disk: the dirty pages of the one
	// before would otherwise be written back during it.
	var snaps, plain []time.Duration
	for i := range 5 {
		run("sync")
		snaps = append(snaps, run(bin, "-f", config, "snapshot", box, fmt.Sprintf("bench-%d", i)))
		run("docker", "volume", "create", copies[i])
		run("sync")
		plain = append(plain, run("docker", "run", "--rm", "--network", "none", "-u", "0", "--entrypoint", "cp",
			"-v", compose.VolumeName(box, compose.AgentVolume)+":/s:ro", "-v", copies[i]+":/d", image, "-a", "/s/.", "/d/"))
	}
	b.Logf("snapshots %v; plain copies %v", snaps, plain)

	// A fork: boxes apply of a new box from: BOX@LABEL (the snapshot's copy
	// made its /data, then the box created and ready), against boxes apply
	// of a new box without from: plus the plain copy above. One box more in
	// boxes.yaml at each turn, the two kinds in turn.
	yaml := "version: 1\nfleet: it\nboxes:\n  " + box + ": {}\n"
	var forks, news []time.Duration
	for i := range 3 {
		fork, fresh := fmt.Sprintf("%s-fork%d", box, i), fmt.Sprintf("%s-new%d", box, i)
		copies = append(copies, fork, fresh) // removed with the rest
		yaml += "  " + fork + ":\n    from: " + box + "@bench-0\n"
		if err := os.WriteFile(config, []byte(yaml), 0o644); err != nil {
			b.Fatal(err)
		}
		run("sync")
		forks = append(forks, run(bin, "-f", config, "apply", "--auto-approve"))
		yaml += "  " + fresh + ": {}\n"
		if err := os.WriteFile(config, []byte(yaml), 0o644); err != nil {
			b.Fatal(err)
		}
		run("sync")
		news = append(news, run(bin, "-f", config, "apply", "--auto-approve"))
	}
	b.Logf("forks %v; new boxes %v", forks, news)
	benchtable.Report(b, benchtable.Row{Figure: "boxes snapshot of 200 MiB of random data, running box (median of 5)", Value: median(snaps).Seconds(), Unit: "s",
		Baseline: "cp -a of the volume into a new one by a helper container", Base: median(plain).Seconds()})
	benchtable.Report(b, benchtable.Row{Figure: "boxes apply of a fork (from: BOX@LABEL) of that snapshot, to its MCP answer (median of 3)", Value: median(forks).Seconds(), Unit: "s",
		Baseline: "boxes apply of a new box, and that cp -a", Base: (median(news) + median(plain)).Seconds()})
}

// realEngineBench skips a benchmark under -short, and returns the test
// image (BOXES_TEST_IMAGE, default hermes-box-lite:test).
func realEngineBench(b *testing.B) string {
	b.Helper()
	if testing.Short() {
		b.Skip("real Docker engine")
	}
	if image := os.Getenv("BOXES_TEST_IMAGE"); image != "" {
		return image
	}
	return "hermes-box-lite:test"
}

// benchBinary builds the real boxes binary, for a benchmark to time its
// commands as a person runs them.
func benchBinary(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "boxes")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/hermes-box/boxes/cmd/boxes").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
