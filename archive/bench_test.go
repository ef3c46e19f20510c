package archive

import (
	"archive/tar"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/hermes-box/boxes/internal/benchtable"
)

// benchSize is the data each benchmark archives: 200 MiB of file content.
const benchSize = 200 << 20

// benchTar writes a box's data tar of benchSize bytes of file content to w,
// generated on the fly: incompressible (16 files of random bytes) or
// compressible (a node_modules-like tree of ~8 KiB text files).
func benchTar(w io.Writer, compressible bool) error {
	return benchTarSized(w, compressible, benchSize)
}

// benchTarSized is benchTar of size bytes of file content.
func benchTarSized(w io.Writer, compressible bool, size int64) error {
	tw := tar.NewWriter(w)
	mtime := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, d := range []string{"data/", "data/home/", "data/home/agent/", "data/home/agent/m/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: mtime}); err != nil {
			return err
		}
	}
	rng := rand.NewChaCha8([32]byte{7})
	if !compressible {
		const n = 16
		for i := range n {
			h := &tar.Header{Typeflag: tar.TypeReg, Name: fmt.Sprintf("data/home/agent/m/blob%02d", i), Mode: 0o644, Size: size / n, ModTime: mtime}
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			if _, err := io.CopyN(tw, rng, size/n); err != nil {
				return err
			}
		}
		return tw.Close()
	}
	words := strings.Fields("function return const let var module exports require this that value length index object string number undefined null true false async await promise then catch ( ) { } ; = => . , 0 1 2 42 'use strict' // TODO")
	seps := []string{" ", " ", " ", "\n", "\n  "}
	file := make([]byte, 0, 9<<10)
	written, dir := int64(0), 0
	for i := 0; written < size; i++ {
		if i%100 == 0 {
			dir++
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: fmt.Sprintf("data/home/agent/m/pkg%d/", dir), Mode: 0o755, ModTime: mtime}); err != nil {
				return err
			}
		}
		file = file[:0]
		for len(file) < 8<<10 {
			r := rng.Uint64()
			file = append(file, words[r%uint64(len(words))]...)
			file = append(file, seps[(r>>32)%uint64(len(seps))]...)
		}
		body := file
		if rest := size - written; int64(len(body)) > rest {
			body = body[:rest]
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Name: fmt.Sprintf("data/home/agent/m/pkg%d/f%d.js", dir, i), Mode: 0o644, Size: int64(len(body)), ModTime: mtime}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(body); err != nil {
			return err
		}
		written += int64(len(body))
	}
	return tw.Close()
}

// peakHeap samples the heap in use until stop is called, and returns the
// highest value seen.
func peakHeap() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() uint64 { close(done); <-finished; return peak.Load() }
}

// BenchmarkArchive writes and reads back (Verify) an archive of 200 MiB of
// incompressible and of compressible data, with gzip (format 1's), zstd
// (format 2's) and S2 (format 3's). Figures: write and read MB/s, archive
// size, and the peak heap of each phase; for the make bench table, each S2
// figure against zstd's, and zstd's against gzip's.
func BenchmarkArchive(b *testing.B) {
	type figures struct{ write, read, size, heap float64 }
	got := map[string]figures{}
	ScryptWorkFactor = 10
	rcp, err := PassphraseRecipient("bench")
	if err != nil {
		b.Fatal(err)
	}
	id, err := PassphraseIdentity("bench")
	if err != nil {
		b.Fatal(err)
	}
	for _, data := range []string{"incompressible", "compressible"} {
		for _, c := range []struct {
			name string
			c    compression
		}{{"gzip", compressGzip}, {"zstd", compressZstd}, {"s2", compressS2}} {
			b.Run(data+"/"+c.name, func(b *testing.B) {
				path := filepath.Join(b.TempDir(), "a")
				var wsec, rsec float64
				var wpeak, rpeak uint64
				var size int64
				for b.Loop() {
					pr, pw := io.Pipe()
					go func() { pw.CloseWithError(benchTar(pw, data == "compressible")) }()
					f, err := os.Create(path)
					if err != nil {
						b.Fatal(err)
					}
					runtime.GC()
					stop := peakHeap()
					start := time.Now()
					if _, _, err := write(f, Manifest{Box: "bench"}, pr, c.c, []age.Recipient{rcp}); err != nil {
						b.Fatal(err)
					}
					wsec += time.Since(start).Seconds()
					wpeak = max(wpeak, stop())
					fi, _ := f.Stat()
					size = fi.Size()
					f.Close()

					runtime.GC()
					stop = peakHeap()
					start = time.Now()
					if _, _, err := VerifyFile(path, id); err != nil {
						b.Fatal(err)
					}
					rsec += time.Since(start).Seconds()
					rpeak = max(rpeak, stop())
				}
				b.SetBytes(benchSize)
				b.ReportMetric(float64(b.N)*benchSize/(1<<20)/wsec, "write-MiB/s")
				b.ReportMetric(float64(b.N)*benchSize/(1<<20)/rsec, "read-MiB/s")
				b.ReportMetric(float64(size)/(1<<20), "archive-MiB")
				b.ReportMetric(float64(wpeak)/(1<<20), "write-peak-heap-MiB")
				b.ReportMetric(float64(rpeak)/(1<<20), "read-peak-heap-MiB")
				n := float64(b.N)
				got[data+"/"+c.name] = figures{write: wsec / n, read: rsec / n, size: float64(size) / (1 << 20), heap: float64(max(wpeak, rpeak)) / (1 << 20)}
			})
		}
	}
	for _, data := range []string{"incompressible", "compressible"} {
		what := "200 MiB of " + map[string]string{"incompressible": "random data", "compressible": "source-like text"}[data]
		for _, pair := range [][2]string{{"s2", "zstd"}, {"zstd", "gzip"}} {
			v, vok := got[data+"/"+pair[0]]
			base, bok := got[data+"/"+pair[1]]
			if !vok || !bok {
				continue
			}
			name := map[string]string{"s2": "S2, format 3", "zstd": "zstd, format 2", "gzip": "gzip, format 1"}
			for _, r := range []benchtable.Row{
				{Figure: "archive write (" + name[pair[0]] + "), " + what, Value: v.write, Unit: "s", Baseline: name[pair[1]], Base: base.write},
				{Figure: "archive read and verify (" + name[pair[0]] + "), " + what, Value: v.read, Unit: "s", Baseline: name[pair[1]], Base: base.read},
				{Figure: "archive size (" + name[pair[0]] + "), " + what, Value: v.size, Unit: "MiB", Baseline: name[pair[1]], Base: base.size},
				{Figure: "archive peak heap (" + name[pair[0]] + "), " + what, Value: v.heap, Unit: "MiB", Baseline: name[pair[1]], Base: base.heap},
			} {
				benchtable.Report(b, r)
			}
		}
	}
}
