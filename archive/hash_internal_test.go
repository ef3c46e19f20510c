package archive

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"testing"
	"testing/iotest"
)

// The hashing goroutine gets each file's content in pieces of its buffers'
// size and of the reads' sizes: its hashes are those of the whole files
// whatever the split, for files of every size around a buffer's, read in
// pieces of one byte too, and a drained rest counts.
func TestHasherHashesWholeFilesAcrossItsBuffers(t *testing.T) {
	sizes := []int{0, 1, hashBufferSize - 1, hashBufferSize, hashBufferSize + 1, 3*hashBufferSize + 7, (hashBuffers + 3) * hashBufferSize}
	hs := &hasher{}
	var want []fileHash
	for i, n := range sizes {
		body := bytes.Repeat([]byte{byte(i + 1), byte(n)}, n/2+1)[:n]
		name := fmt.Sprintf("f%d", i)
		want = append(want, fileHash{name: name, sum: sha256.Sum256(body)})
		var src io.Reader = bytes.NewReader(body)
		if i%2 == 1 {
			src = iotest.OneByteReader(src)
		}
		r, done := hs.wrap(name, src)
		// Half is read by the caller; done drains the rest.
		if _, err := io.CopyN(io.Discard, r, int64(n/2)); err != nil {
			t.Fatal(err)
		}
		if err := done(); err != nil {
			t.Fatal(err)
		}
	}
	hs.wait()
	hs.wait() // again: nothing
	if len(hs.list) != len(want) {
		t.Fatalf("%d hashes, want %d", len(hs.list), len(want))
	}
	for i := range want {
		if hs.list[i] != want[i] {
			t.Errorf("file %s (%d bytes): hash %x, want %x", want[i].name, sizes[i], hs.list[i].sum, want[i].sum)
		}
	}
}

// A walk that stops inside a file ends the goroutine all the same; the
// file not ended is not listed.
func TestHasherStoppedInAFile(t *testing.T) {
	hs := &hasher{}
	r, done := hs.wrap("whole", bytes.NewReader([]byte("abc")))
	if _, err := io.Copy(io.Discard, r); err != nil {
		t.Fatal(err)
	}
	if err := done(); err != nil {
		t.Fatal(err)
	}
	r, _ = hs.wrap("cut", bytes.NewReader(make([]byte, 5*hashBufferSize)))
	if _, err := io.CopyN(io.Discard, r, 2*hashBufferSize+3); err != nil {
		t.Fatal(err)
	}
	hs.wait()
	if len(hs.list) != 1 || hs.list[0].name != "whole" || hs.list[0].sum != sha256.Sum256([]byte("abc")) {
		t.Errorf("list %v, want the whole file alone", hs.list)
	}
}

// A tree of small files is handed to the hashing goroutine a buffer at a
// time, not a file at a time (each hand-over may wake it, which costs more
// than hashing a small file), and each file still gets its own hash.
func TestHasherHandsOverBuffersNotFiles(t *testing.T) {
	const files, size = 3000, 1000
	hs := &hasher{}
	var want []fileHash
	for i := range files {
		body := bytes.Repeat([]byte{byte(i), byte(i >> 8)}, size/2)
		name := fmt.Sprintf("f%d", i)
		want = append(want, fileHash{name: name, sum: sha256.Sum256(body)})
		_, done := hs.wrap(name, bytes.NewReader(body))
		if err := done(); err != nil {
			t.Fatal(err)
		}
	}
	hs.wait()
	if most := files*size/hashBufferSize + 1; hs.handed > most {
		t.Errorf("%d files of %d bytes took %d hand-overs, want at most %d", files, size, hs.handed, most)
	}
	if len(hs.list) != files {
		t.Fatalf("%d hashes, want %d", len(hs.list), files)
	}
	for i := range want {
		if hs.list[i] != want[i] {
			t.Fatalf("file %s: hash %x, want %x", want[i].name, hs.list[i].sum, want[i].sum)
		}
	}
}

// What a stream copies out of a hashed file (copyAll, read straight into
// the hashing's buffers) is the file, byte for byte, for files around the
// buffers' size read in pieces of every size; and each is hashed whole.
func TestHashedCopyIsTheFile(t *testing.T) {
	sizes := []int{0, 5, hashBufferSize - 3, hashBufferSize, 2*hashBufferSize + 11, (hashBuffers + 2) * hashBufferSize}
	hs := &hasher{}
	var want [][sha256.Size]byte
	for i, n := range sizes {
		body := randomBytes(n)
		want = append(want, sha256.Sum256(body))
		var src io.Reader = bytes.NewReader(body)
		if i%2 == 1 {
			src = iotest.HalfReader(src)
		}
		r, done := hs.wrap(fmt.Sprintf("f%d", i), src)
		var out bytes.Buffer
		if _, err := copyAll(&out, r); err != nil {
			t.Fatal(err)
		}
		if err := done(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), body) {
			t.Fatalf("file of %d bytes: copied %d bytes, not the file", n, out.Len())
		}
	}
	hs.wait()
	if len(hs.list) != len(sizes) {
		t.Fatalf("%d hashes, want %d", len(hs.list), len(sizes))
	}
	for i := range sizes {
		if hs.list[i].sum != want[i] {
			t.Errorf("file of %d bytes: hash %x, want %x", sizes[i], hs.list[i].sum, want[i])
		}
	}
}
