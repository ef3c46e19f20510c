package archive

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"filippo.io/age"
)

// dataTar is a box's data tar of n files of size bytes, random (so the
// archive spans many age chunks), with name as the first file's name.
func dataTar(t *testing.T, n, size int, name string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []string{"data/", "data/home/", "data/home/agent/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755}); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.NewChaCha8([32]byte{3})
	body := make([]byte, size)
	for i := range n {
		rng.Read(body)
		h := &tar.Header{Typeflag: tar.TypeReg, Name: fmt.Sprintf("data/home/agent/f%d", i), Mode: 0o644, Size: int64(size)}
		if i == 0 {
			h.Name = name
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func keys(t *testing.T) (age.Recipient, age.Identity) {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id.Recipient(), id
}

func newFile(t *testing.T) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "a"+Ext))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// slowReader hands out its data in small pieces with pauses, so that the
// read-back catches up with the write and has to wait for it.
type slowReader struct {
	r     io.Reader
	count int
}

func (s *slowReader) Read(p []byte) (int, error) {
	s.count++
	if s.count%16 == 0 {
		time.Sleep(time.Millisecond)
	}
	return s.r.Read(p[:min(len(p), 4096)])
}

func TestFileWriterReadsBack(t *testing.T) {
	r, id := keys(t)
	// Past its write buffer, and past two of the pieces whose writeback
	// starts early, in a large one.
	for _, c := range []struct {
		slow        bool
		files, size int
	}{{false, 12, 100 << 10}, {true, 12, 100 << 10}, {false, 10, 2*writebackSize/10 + writeSize + 3}} {
		t.Run(fmt.Sprintf("slow=%v,%dx%d", c.slow, c.files, c.size), func(t *testing.T) {
			f := newFile(t)
			fw, err := NewFileWriter(f, id, r)
			if err != nil {
				t.Fatal(err)
			}
			var data io.Reader = bytes.NewReader(dataTar(t, c.files, c.size, "data/home/agent/first"))
			if c.slow {
				data = &slowReader{r: data}
			}
			wrote, _, err := fw.Copy(Manifest{Box: "dev", Size: 64 << 20}, data)
			if err != nil {
				t.Fatal(err)
			}
			if err := fw.Close(); err != nil {
				t.Fatal(err)
			}
			m, read, err := VerifyFile(f.Name(), id)
			if err != nil {
				t.Fatal(err)
			}
			if read != wrote || read.Files != c.files || read.Hashed != c.files || m.Box != "dev" {
				t.Fatalf("read back %+v (manifest %+v), wrote %+v", read, m, wrote)
			}
		})
	}
}

func TestFileWriterWrongIdentity(t *testing.T) {
	r, _ := keys(t)
	_, other := keys(t)
	fw, err := NewFileWriter(newFile(t), other, r)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := fw.Copy(Manifest{Box: "dev"}, bytes.NewReader(dataTar(t, 3, 70<<10, "data/home/agent/a"))); err != nil {
		t.Fatal(err)
	}
	err = fw.Close()
	if !errors.Is(err, ErrWrongPassphrase) {
		t.Fatalf("Close with an identity that cannot decrypt: %v, want ErrWrongPassphrase", err)
	}
}

func TestFileWriterAbort(t *testing.T) {
	r, id := keys(t)
	fw, err := NewFileWriter(newFile(t), id, r)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = fw.Copy(Manifest{Box: "dev"}, bytes.NewReader(dataTar(t, 3, 70<<10, "data/../etc/passwd")))
	if err == nil || !strings.Contains(err.Error(), `".."`) {
		t.Fatalf("Copy of a bad entry: %v", err)
	}
	done := make(chan struct{})
	go func() { fw.Abort(); fw.Abort(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Abort did not return: the read-back is stuck")
	}
	if err := fw.Close(); err == nil {
		t.Fatal("Close after Abort succeeded")
	}
}

// A manifest Copy cannot write fails it before any data is read, and the
// file never reads back as an archive.
func TestFileWriterBadManifest(t *testing.T) {
	r, id := keys(t)
	f := newFile(t)
	fw, err := NewFileWriter(f, id, r)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.NewReader(dataTar(t, 3, 70<<10, "data/home/agent/a"))
	if _, _, err := fw.Copy(Manifest{}, data); err == nil || !strings.Contains(err.Error(), "no box name") {
		t.Fatalf("Copy of a manifest without a box: %v", err)
	}
	if data.Len() != int(data.Size()) {
		t.Errorf("Copy read %d bytes of data after refusing the manifest", int(data.Size())-data.Len())
	}
	fw.Abort()
	if _, _, err := VerifyFile(f.Name(), id); err == nil {
		t.Fatal("the aborted file verifies")
	}
}

// followEnded is a follower of the whole of file f, written already.
func followEnded(t *testing.T, f *os.File) *follower {
	t.Helper()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	g := newGrowth()
	g.add(int(fi.Size()))
	g.end(nil)
	return &follower{f: f, g: g}
}

// TestReadBackCatchesDamage: the read-back proves what the file holds, not
// what was meant to be written: a flipped byte anywhere, or a file cut
// short, is an error.
func TestReadBackCatchesDamage(t *testing.T) {
	r, id := keys(t)
	var ar bytes.Buffer
	if _, err := Write(&ar, Manifest{Box: "dev"}, bytes.NewReader(dataTar(t, 8, 100<<10, "data/home/agent/a")), r); err != nil {
		t.Fatal(err)
	}
	good := ar.Bytes()
	put := func(b []byte) *os.File {
		f := newFile(t)
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
		return f
	}
	if rb := readFollowing(followEnded(t, put(good)), id); rb.err != nil || rb.plain.n == 0 {
		t.Fatalf("intact archive: %+v", rb)
	}
	for _, at := range []int{200, len(good) / 2, len(good) - 3} {
		bad := bytes.Clone(good)
		bad[at] ^= 1
		if rb := readFollowing(followEnded(t, put(bad)), id); rb.err == nil {
			t.Errorf("byte %d of %d flipped: read back without error", at, len(good))
		}
	}
	for _, n := range []int{len(good) - 1, len(good) / 2} {
		if rb := readFollowing(followEnded(t, put(good[:n])), id); rb.err == nil {
			t.Errorf("cut to %d of %d bytes: read back without error", n, len(good))
		}
	}
	// A file shorter than the writer says it wrote.
	f := put(good[:len(good)/2])
	g := newGrowth()
	g.add(len(good))
	g.end(nil)
	if rb := readFollowing(&follower{f: f, g: g}, id); rb.err == nil {
		t.Error("a file shorter than written read back without error")
	}
}

// TestWriteVerifies: what Write and FileWriter write passes Verify, so
// the read-back's byte-for-byte comparison of the tar stands for Verify's
// checks (see FileWriter).
func TestWriteVerifies(t *testing.T) {
	r, id := keys(t)
	for _, compressible := range []bool{false, true} {
		var src bytes.Buffer
		if err := benchTarSized(&src, compressible, 4<<20); err != nil {
			t.Fatal(err)
		}
		f := newFile(t)
		fw, err := NewFileWriter(f, id, r)
		if err != nil {
			t.Fatal(err)
		}
		wrote, _, err := fw.Copy(Manifest{Box: "dev"}, bytes.NewReader(src.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		if err := fw.Close(); err != nil {
			t.Fatal(err)
		}
		if _, read, err := VerifyFile(f.Name(), id); err != nil || read != wrote {
			t.Fatalf("compressible=%v: Verify: %+v, %v; wrote %+v", compressible, read, err, wrote)
		}
	}
}

// The writebacks asked for while a large file is written cover it from its
// start, in order, without overlap, each of writebackSize or more; one the
// disk makes wait grows the next range instead of queueing; and none is
// started once Close or Abort has returned.
func TestFileWriterWritebacks(t *testing.T) {
	r, id := keys(t)
	data := dataTar(t, 10, 5*writebackSize/10+writeSize, "data/home/agent/first")
	for _, slow := range []bool{false, true} {
		for _, abort := range []bool{false, true} {
			t.Run(fmt.Sprintf("slow=%v,abort=%v", slow, abort), func(t *testing.T) {
				var mu sync.Mutex
				var ranges [][2]int64
				over := false
				writeback := func(_ *os.File, off, n int64) {
					if slow {
						time.Sleep(20 * time.Millisecond)
					}
					mu.Lock()
					defer mu.Unlock()
					if over {
						t.Errorf("a writeback of %d bytes at %d after the writer returned", n, off)
					}
					ranges = append(ranges, [2]int64{off, n})
				}
				f := newFile(t)
				fw, err := newFileWriter(f, id, writeback, r)
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := fw.Copy(Manifest{Box: "dev", Size: 64 << 20}, bytes.NewReader(data)); err != nil {
					t.Fatal(err)
				}
				if abort {
					fw.Abort()
				} else if err := fw.Close(); err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				over = true
				got := ranges
				mu.Unlock()
				fi, err := f.Stat()
				if err != nil {
					t.Fatal(err)
				}
				if len(got) == 0 {
					t.Fatalf("no writeback for a file of %d bytes", fi.Size())
				}
				next := int64(0)
				for _, rg := range got {
					if rg[0] != next || rg[1] < writebackSize {
						t.Fatalf("writebacks %v: not one range after the other from 0, each of %d bytes or more", got, writebackSize)
					}
					next += rg[1]
				}
				if next > fi.Size() {
					t.Errorf("writebacks %v cover %d bytes of a file of %d", got, next, fi.Size())
				}
			})
		}
	}
}
