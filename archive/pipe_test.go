package archive

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"time"
)

// The pipe passes on every byte in order, across its buffers' edges,
// whatever the sizes of the writes and reads, and then the writer's end.
func TestRoomyPipeCarriesTheStream(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	want := make([]byte, 300_000)
	for i := range want {
		want[i] = byte(rng.Uint32())
	}
	p := newRoomyPipe(3, 4096)
	go func() {
		rest := want
		for len(rest) > 0 {
			n := min(len(rest), 1+rng.IntN(10_000))
			if _, err := p.Write(rest[:n]); err != nil {
				p.CloseWithError(err)
				return
			}
			rest = rest[n:]
		}
		p.CloseWithError(nil)
	}()
	var got bytes.Buffer
	buf := make([]byte, 777)
	for {
		n, err := p.Read(buf)
		got.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("read %d bytes, not the %d written", got.Len(), len(want))
	}

	bad := errors.New("the archive is damaged")
	p = newRoomyPipe(2, 16)
	go func() {
		p.Write([]byte("some"))
		p.CloseWithError(bad)
	}()
	b, err := io.ReadAll(p)
	if string(b) != "some" || !errors.Is(err, bad) {
		t.Errorf("read %q, %v; want the bytes, then the writer's error", b, err)
	}
}

// A reader that stops (the engine refused the copy) frees a writer
// waiting for room, which then fails.
func TestRoomyPipeReaderGone(t *testing.T) {
	p := newRoomyPipe(2, 16)
	done := make(chan error, 1)
	go func() {
		_, err := p.Write(make([]byte, 1000)) // more than the pipe holds
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Write returned %v with the pipe full", err)
	case <-time.After(50 * time.Millisecond):
	}
	p.Close()
	select {
	case err := <-done:
		if !errors.Is(err, io.ErrClosedPipe) {
			t.Errorf("Write after the reader closed: %v, want io.ErrClosedPipe", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Write still waits after the reader closed")
	}
}

// randomBytes is n bytes of a fixed random stream.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	rng := rand.NewChaCha8([32]byte{9})
	_, _ = rng.Read(b)
	return b
}
