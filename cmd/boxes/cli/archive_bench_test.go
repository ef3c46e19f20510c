package cli

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/internal/benchtable"
)

// measured is one run of a command: how long it took, its peak RSS, and
// when (since its start) each line it printed on stderr arrived.
type measured struct {
	took  time.Duration
	rss   float64 // MiB
	lines []stampedLine
}

type stampedLine struct {
	at   time.Duration
	text string
}

// at is when the first line from line from on that contains one of whats
// arrived, and that line's index; -1 if none did.
func (m measured) at(from int, whats ...string) (time.Duration, int) {
	for i := max(from, 0); i < len(m.lines); i++ {
		for _, what := range whats {
			if strings.Contains(m.lines[i].text, what) {
				return m.lines[i].at, i
			}
		}
	}
	return 0, -1
}

// stamper records the lines written to it with their arrival times.
type stamper struct {
	mu    sync.Mutex
	start time.Time
	part  []byte
	lines []stampedLine
}

func (s *stamper) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Since(s.start)
	s.part = append(s.part, p...)
	for {
		i := bytes.IndexByte(s.part, '\n')
		if i < 0 {
			break
		}
		s.lines = append(s.lines, stampedLine{at: now, text: string(s.part[:i])})
		s.part = s.part[i+1:]
	}
	return len(p), nil
}

func (s *stamper) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, l := range s.lines {
		b.WriteString(l.text + "\n")
	}
	return b.String()
}

// measure runs cmd to its end and samples its peak RSS (VmHWM) while it
// runs. The kernel's ru_maxrss of a child is no use here: a child that Go
// starts with vfork inherits the test process's own peak when it execs.
func measure(b *testing.B, cmd *exec.Cmd) measured {
	b.Helper()
	start := time.Now()
	errb := &stamper{start: start}
	if cmd.Stderr == nil {
		cmd.Stderr = errb
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("%v: %v", cmd.Args, err)
	}
	done := make(chan struct{})
	peak := make(chan int64, 1)
	go func() {
		var hwm int64
		status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		for {
			if data, err := os.ReadFile(status); err == nil {
				for _, line := range strings.Split(string(data), "\n") {
					if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
						var kib int64
						if _, err := fmt.Sscan(v, &kib); err == nil && kib > hwm {
							hwm = kib
						}
					}
				}
			}
			select {
			case <-done:
				peak <- hwm
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	err := cmd.Wait()
	m := measured{took: time.Since(start)}
	close(done)
	errb.mu.Lock()
	m.lines = errb.lines
	errb.mu.Unlock()
	m.rss = float64(<-peak) / 1024
	if err != nil {
		b.Fatalf("%v: %v\n%s", cmd.Args, err, errb)
	}
	return m
}

// dataset writes a tar of 200 MiB of file content under home/agent/bench/
// to w: random bytes in a few files, or a tree of 20480 text files of
// 10 KiB (like node_modules) that compresses well.
func dataset(w io.Writer, compressible bool) error {
	tw := tar.NewWriter(w)
	now := time.Now()
	rng := rand.New(rand.NewChaCha8([32]byte{1}))
	dir := func(name string) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, Uid: 1000, Gid: 1000, ModTime: now})
	}
	file := func(name string, body []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(body)), Uid: 1000, Gid: 1000, ModTime: now}); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	if err := dir("bench/"); err != nil {
		return err
	}
	if !compressible {
		body := make([]byte, 50<<20)
		for i := range 4 {
			for j := 0; j < len(body); j += 8 {
				v := rng.Uint64()
				for k := 0; k < 8; k++ {
					body[j+k] = byte(v >> (8 * k))
				}
			}
			if err := file(fmt.Sprintf("bench/random%d", i), body); err != nil {
				return err
			}
		}
		return tw.Close()
	}
	for d := range 256 {
		pkg := fmt.Sprintf("bench/pkg%03d/", d)
		if err := dir(pkg); err != nil {
			return err
		}
		for f := range 80 {
			var sb strings.Builder
			for sb.Len() < 10<<10 {
				fmt.Fprintf(&sb, "export function f%d_%d(x) { return x * %d + %d; } // %x\n", d, f, sb.Len(), rng.IntN(1000), rng.Uint32())
			}
			if err := file(fmt.Sprintf("%s%03d.js", pkg, f), []byte(sb.String())[:10<<10]); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

// BenchmarkSaveLoad saves and loads 200 MiB of incompressible and of
// compressible data, against docker cp of the same data out of and into a
// box in the same run, and reports the peak memory of each.
//
// A load makes a box, which docker cp does not: it is compared with docker
// cp alone, and with docker cp plus a new box (boxes apply of it, then
// boxes doctor). Its data part is a row too, timed from the progress lines
// load prints as it goes: the check of the whole archive (from load's
// start to its "restore: … checked" line), the restore into the new volume
// (from "restoring /data" to "restored /data sent") and the check of what
// the started box holds (from "resuming the restored box" to "restored
// /data checked"), against docker cp of the same tar into a volume.
func BenchmarkSaveLoad(b *testing.B) {
	image := realEngineBench(b)
	// The machine's speed wanders from minute to minute (two shared cores,
	// a file system in a VM): each figure and its baseline are measured
	// in turn, reps times, and their medians compared; the disks' dirty
	// pages are written out before each, so that none pays for another's.
	//
	// Nothing is deleted between two measurements of a data set: every
	// copy, box and file of a rep is kept until all reps are done (the
	// boxes stopped), about 2.5 GB for the random data. On a file system
	// without a journal (ext4 here), making a file looks past each inode
	// freed in the last minute or more, so the 20480 files a load or a
	// docker cp writes took anything from 1 s to 14 s, by how many files
	// the one before had just deleted.
	const reps = 3
	const src = "it-h10b-bench-src"
	dst := func(rep int) string { return fmt.Sprintf("it-h10b-bench-dst%d", rep) }
	fresh := func(rep int) string { return fmt.Sprintf("it-h10b-bench-new%d", rep) }
	scratch := func(rep int) string { return fmt.Sprintf("it-h10b-bench-cp%d", rep) }
	removeReps := func() {
		for rep := range reps {
			removeBoxes(dst(rep), fresh(rep))
			_ = exec.Command("docker", "rm", "-f", scratch(rep)).Run()
			_ = exec.Command("docker", "volume", "rm", "-f", scratch(rep)).Run()
		}
	}
	cleanup := func() {
		removeBoxes(src)
		removeReps()
	}
	cleanup()
	b.Cleanup(cleanup)

	bin := benchBinary(b)
	dir := b.TempDir()
	key, err := age.GenerateX25519Identity()
	if err != nil {
		b.Fatal(err)
	}
	keyFile := filepath.Join(dir, "key.txt")
	if err := os.WriteFile(keyFile, []byte(key.String()+"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	b.Setenv(backup.EnvIdentity, keyFile)
	yaml := "version: 1\nfleet: it\narchive:\n  recipients: [" + key.Recipient().String() + "]\nboxes:\n  " + src + ": {}\n"
	for rep := range reps {
		yaml += "  " + dst(rep) + ": {}\n  " + fresh(rep) + ": {}\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "boxes.yaml"), []byte(yaml), 0o644); err != nil {
		b.Fatal(err)
	}
	boxesCmd := func(args ...string) *exec.Cmd {
		return exec.Command(bin, append([]string{"-f", filepath.Join(dir, "boxes.yaml")}, args...)...)
	}
	measure(b, boxesCmd("lock", "image", image))
	measure(b, boxesCmd("apply", "--auto-approve", "--target", src))
	agent := compose.ContainerName(src, compose.AgentService)
	measure(b, exec.Command("docker", "exec", "-u", "0", agent, "sh", "-c", "for i in $(seq 300); do hb health agent >/dev/null 2>&1 && break; sleep 0.2; done"))

	settle := func() { _ = exec.Command("sync").Run() }
	for _, c := range []struct {
		name         string
		compressible bool
	}{{"200 MiB incompressible", false}, {"200 MiB compressible (20480 files of 10 KiB)", true}} {
		// The data goes in as docker cp would put it.
		measure(b, exec.Command("docker", "exec", "-u", "0", agent, "rm", "-rf", "/data/home/agent/bench"))
		in := exec.Command("docker", "cp", "-", agent+":/data/home/agent")
		pr, pw := io.Pipe()
		in.Stdin = pr
		go func() { pw.CloseWithError(dataset(pw, c.compressible)) }()
		measure(b, in)

		var cpOut, cpIn, save, load, newBox, data series
		var archiveSize int64
		files := b.TempDir()
		for rep := range reps {
			// Baselines: docker cp of /data out to a file, and of that
			// tar into a fresh volume; and a new box made and doctored.
			tarFile := filepath.Join(files, fmt.Sprintf("data%d.tar", rep))
			f, err := os.Create(tarFile)
			if err != nil {
				b.Fatal(err)
			}
			out := exec.Command("docker", "cp", agent+":/data", "-")
			out.Stdout = f
			settle()
			cpOut.add(measure(b, out))
			f.Close()
			measure(b, exec.Command("docker", "create", "--name", scratch(rep), "-v", scratch(rep)+":/data", "--entrypoint", "true", image))
			f, err = os.Open(tarFile)
			if err != nil {
				b.Fatal(err)
			}
			into := exec.Command("docker", "cp", "-", scratch(rep)+":/")
			into.Stdin = f
			settle()
			cpIn.add(measure(b, into))
			f.Close()
			settle()
			applied := measure(b, boxesCmd("apply", "--auto-approve", "--target", fresh(rep)))
			doctored := measure(b, boxesCmd("doctor", fresh(rep)))
			newBox.add(measured{took: applied.took + doctored.took})
			// Stopped, not removed: a running box's health checks would
			// weigh on the measures after it and not on those before.
			measure(b, boxesCmd("stop", fresh(rep)))

			archiveFile := filepath.Join(files, fmt.Sprintf("%s-bench%d%s", src, rep, archive.Ext))
			settle()
			save.add(measure(b, boxesCmd("save", src, "-o", archiveFile)))
			settle()
			l := measure(b, boxesCmd("load", archiveFile, dst(rep)))
			load.add(l)
			measure(b, boxesCmd("stop", dst(rep)))
			info, _ := os.Stat(archiveFile)
			archiveSize = info.Size()

			// Progress lines are "BOX: STEP", or "BOX STEP" redrawn on a
			// terminal. The data part: the check of the whole archive
			// (from the start, to its "restore: … checked" line), the
			// restore, its content hashed as it streams, and the check
			// of what the box holds, once started.
			step := func(from int, msg string) (time.Duration, int) {
				return l.at(from, dst(rep)+": "+msg, dst(rep)+" "+msg)
			}
			prechecked, i := l.at(0, "restore: ")
			restoring, j := step(i, "restoring /data from")
			sent, k := step(j, "restored /data sent")
			resuming, m := step(k, "resuming the restored box")
			checked, n := step(m, "restored /data checked against the archive")
			if i < 0 || j < 0 || k < 0 || m < 0 || n < 0 {
				b.Fatalf("load printed no archive check, restoring, sent, resuming and checked steps:\n%s", lines(l))
			}
			data.add(measured{took: prechecked + sent - restoring + checked - resuming})
			if rep == reps-1 {
				// On stdout: go test cuts a benchmark's long log.
				fmt.Printf("load of %s, its progress:\n%s", c.name, lines(l))
			}
		}
		removeReps()
		os.RemoveAll(files)

		b.Logf("%s: archive %d MiB; medians of %d: save %s (%.0f MiB RSS), docker cp out %s; load %s (%.0f MiB RSS), its data part %s; docker cp in %s; new box and doctor %s",
			c.name, archiveSize>>20, reps, save.median(), save.rss(), cpOut.median(), load.median(), load.rss(), data.median(), cpIn.median(), newBox.median())
		for _, r := range []benchtable.Row{
			{Figure: "save, " + c.name, Value: save.seconds(), Unit: "s", Baseline: "docker cp of /data out", Base: cpOut.seconds()},
			{Figure: "load, " + c.name, Value: load.seconds(), Unit: "s", Baseline: "docker cp of the same tar into a volume", Base: cpIn.seconds()},
			{Figure: "load, " + c.name, Value: load.seconds(), Unit: "s", Baseline: "that docker cp, and a new box (boxes apply, boxes doctor)", Base: cpIn.seconds() + newBox.seconds()},
			{Figure: "load's data part (archive check, restore, restored-data check), " + c.name, Value: data.seconds(), Unit: "s", Baseline: "docker cp of the same tar into a volume", Base: cpIn.seconds()},
			{Figure: "save peak RSS, " + c.name, Value: save.rss(), Unit: "MiB", Baseline: "docker cp out (CLI)", Base: cpOut.rss()},
			{Figure: "load peak RSS, " + c.name, Value: load.rss(), Unit: "MiB", Baseline: "docker cp in (CLI)", Base: cpIn.rss()},
		} {
			benchtable.Report(b, r)
		}
	}
}

// series is the runs of one command in a benchmark.
type series []measured

func (s *series) add(m measured) { *s = append(*s, m) }

// median is the median time of the runs.
func (s series) median() time.Duration {
	d := make([]time.Duration, len(s))
	for i, m := range s {
		d[i] = m.took
	}
	slices.Sort(d)
	return d[len(d)/2]
}

func (s series) seconds() float64 { return s.median().Seconds() }

// rss is the median peak RSS of the runs, in MiB.
func (s series) rss() float64 {
	r := make([]float64, len(s))
	for i, m := range s {
		r[i] = m.rss
	}
	slices.Sort(r)
	return r[len(r)/2]
}

// lines is what m printed on stderr.
func lines(m measured) string {
	var b strings.Builder
	for _, l := range m.lines {
		fmt.Fprintf(&b, "%7.3fs %s\n", l.at.Seconds(), l.text)
	}
	return b.String()
}
