package archive

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
)

// encryptedFile writes plain encrypted to id's recipient to a file and
// returns it, open, and its size.
func encryptedFile(t *testing.T, id *age.X25519Identity, plain []byte) (*os.File, int64) {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "a.age"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	w, err := age.Encrypt(f, id.Recipient())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(plain); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return f, fi.Size()
}

// Decrypted on several cores, the plaintext comes out whole and in order,
// for sizes around age's chunks and the workers' segments; and the
// progress is told every byte of the file, no more.
func TestDecryptFileInOrder(t *testing.T) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, age64K - 1, age64K, age64K + 1, segmentSize - 1, segmentSize, segmentSize + 1, 9*segmentSize/2 + 17} {
		plain := randomBytes(n)
		f, size := encryptedFile(t, id, plain)
		var counted int64
		r, err := decryptFile(context.Background(), f, size, []age.Identity{id}, func(k int64) { counted += k })
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, plain) {
			t.Errorf("%d bytes: read %d bytes, not the plaintext", n, len(got))
		}
		if want := size; n > 0 && counted != want {
			t.Errorf("%d bytes: progress counted %d bytes of a file of %d", n, counted, want)
		}
	}
}

// A damaged chunk in the middle fails the read there, after every chunk
// before it, as age's reader in order fails; a file cut short and a key
// that does not open it are refused before anything is read.
func TestDecryptFileRefusals(t *testing.T) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	plain := randomBytes(5 * segmentSize)
	f, size := encryptedFile(t, id, plain)

	buf := make([]byte, 1)
	if _, err := f.ReadAt(buf, size/2); err != nil {
		t.Fatal(err)
	}
	buf[0] ^= 1
	if _, err := f.WriteAt(buf, size/2); err != nil {
		t.Fatal(err)
	}
	r, err := decryptFile(context.Background(), f, size, []age.Identity{id}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err == nil || !strings.Contains(err.Error(), "failed to decrypt and authenticate payload chunk") {
		t.Errorf("a flipped byte: %v, want a chunk that fails to authenticate", err)
	}
	inOrder, err := age.Decrypt(io.NewSectionReader(f, 0, size), id)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := io.ReadAll(inOrder)
	if len(want)%segmentSize == 0 {
		t.Fatalf("the damaged chunk begins a segment (%d bytes before it): the test shows nothing", len(want))
	}
	if len(got) != len(want) || !bytes.Equal(got, plain[:len(got)]) {
		t.Errorf("before the damage: read %d bytes of the plaintext; age's reader in order reads %d", len(got), len(want))
	}
	buf[0] ^= 1
	if _, err := f.WriteAt(buf, size/2); err != nil {
		t.Fatal(err)
	}

	if _, err := decryptFile(context.Background(), f, size-1000, []age.Identity{id}, nil); err == nil || !strings.Contains(err.Error(), damaged) {
		t.Errorf("a file cut short: %v, want a damaged archive", err)
	}
	other, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decryptFile(context.Background(), f, size, []age.Identity{other}, nil); !errors.Is(err, ErrWrongPassphrase) {
		t.Errorf("another key: %v, want ErrWrongPassphrase", err)
	}
}

// A cancel stops the reading with the context's error, and Close returns
// whatever was read: nothing waits for a reader that went away.
func TestDecryptFileStops(t *testing.T) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	f, size := encryptedFile(t, id, randomBytes(20*segmentSize))
	ctx, cancel := context.WithCancel(context.Background())
	r, err := decryptFile(ctx, f, size, []age.Identity{id}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(io.Discard, r, 2*segmentSize); err != nil {
		t.Fatal(err)
	}
	cancel()
	// What was decrypted ahead may still come (up to two segments per
	// worker queued, and one in each worker's hands); the rest does not.
	if n, err := io.Copy(io.Discard, r); !errors.Is(err, context.Canceled) || n >= 14*segmentSize {
		t.Errorf("read after the cancel: %d bytes more, %v; want context.Canceled, and the segments decrypted ahead at most", n, err)
	}
	closed := make(chan struct{})
	go func() { r.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close still waits after a cancel")
	}

	r, err = decryptFile(context.Background(), f, size, []age.Identity{id}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(io.Discard, r, 100); err != nil {
		t.Fatal(err)
	}
	closed = make(chan struct{})
	go func() { r.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close of a reader read in part still waits")
	}
}

// A chunk damaged in the middle of an archive is named once as damage, by
// the entry it is in, as age's reader in order has it named: the
// decryption's own words, not a second "damaged or truncated".
func TestVerifyNamesADamagedChunkOnce(t *testing.T) {
	r, id := keys(t)
	f := newFile(t)
	if _, err := Write(f, Manifest{Box: "dev"}, bytes.NewReader(dataTar(t, 30, 100<<10, "data/home/agent/first")), r); err != nil {
		t.Fatal(err)
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	buf := []byte{0}
	if _, err := f.ReadAt(buf, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	buf[0] ^= 1
	if _, err := f.WriteAt(buf, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	_, _, err = VerifyFile(f.Name(), id)
	if err == nil || strings.Count(err.Error(), damaged) != 1 || !strings.Contains(err.Error(), "in data/home/agent/f") || !strings.Contains(err.Error(), "failed to decrypt and authenticate payload chunk") {
		t.Errorf("verify of a damaged chunk: %v", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	_, _, inOrder := Verify(f, id)
	if err == nil || inOrder == nil || err.Error() != inOrder.Error() {
		t.Errorf("verify of a damaged chunk on several cores: %v; in order: %v", err, inOrder)
	}
}
