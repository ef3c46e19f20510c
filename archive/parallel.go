package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"

	"filippo.io/age"
)

// segmentSize is the plaintext a worker of decryptFile decrypts at a time:
// sixteen of age's 64 KiB chunks.
const segmentSize = 1 << 20

// decryptFile decrypts the age-encrypted file src of size bytes on several
// cores at once: age authenticates each 64 KiB chunk on its own, so whole
// chunks can be decrypted side by side (age.DecryptReaderAt) and handed
// over in order. The check of a whole archive before a restore runs alone
// on its machine, and decryption is most of its work on incompressible
// data. The last chunk is checked first (DecryptReaderAt does), so a file
// cut short is refused before anything is read.
//
// counted, when set, is told the bytes of the file each piece handed over
// took, in order, for progress. Reading stops with ctx's error once ctx is
// done. Close stops the workers and waits for them.
func decryptFile(ctx context.Context, src io.ReaderAt, size int64, ids []age.Identity, counted func(n int64)) (io.ReadCloser, error) {
	plain, plainSize, err := age.DecryptReaderAt(src, size, ids...)
	if err != nil {
		return nil, decryptAtError(err)
	}
	workers := min(runtime.GOMAXPROCS(0), 4)
	d := &parallelReader{
		ctx:     ctx,
		queue:   make(chan chan segment, 2*workers),
		stop:    make(chan struct{}),
		counted: counted,
		header:  size - max(sealed(plainSize), ageOverhead), // an empty payload is one empty chunk
	}
	jobs := make(chan job)
	d.wg.Add(workers + 1)
	for range workers {
		go func() {
			defer d.wg.Done()
			for j := range jobs {
				if err := ctx.Err(); err != nil {
					j.out <- segment{err: err}
					continue
				}
				// A chunk that fails leaves the ones before it in buf[:n],
				// which are handed over before the failure: the reader
				// fails where age's reader in order does, in the same
				// entry.
				buf := make([]byte, j.n)
				n, err := plain.ReadAt(buf, j.off)
				if err == io.EOF && n == len(buf) {
					err = nil
				}
				j.out <- segment{buf: buf[:n], err: err}
			}
		}()
	}
	go func() {
		defer d.wg.Done()
		defer close(jobs)
		defer close(d.queue)
		for off := int64(0); off < plainSize; off += segmentSize {
			n := min(segmentSize, plainSize-off)
			j := job{off: off, n: n, out: make(chan segment, 1)}
			select {
			case d.queue <- j.out:
			case <-d.stop:
				return
			}
			select {
			case jobs <- j:
			case <-d.stop:
				j.out <- segment{err: io.ErrClosedPipe}
				return
			}
		}
	}()
	return d, nil
}

// The sizes of age's payload: chunks of 64 KiB, each with a 16-byte tag.
const (
	age64K      = 64 << 10
	ageOverhead = 16
)

// sealed is the bytes of the file that n bytes of plaintext take, n a
// whole number of chunks or the payload's end.
func sealed(n int64) int64 { return n + (n+age64K-1)/age64K*ageOverhead }

// job is one segment for a worker to decrypt.
type job struct {
	off, n int64 // of the plaintext
	out    chan segment
}

// segment is a decrypted piece of the plaintext, or why it is not.
type segment struct {
	buf []byte
	err error
}

// parallelReader reads the segments decryptFile's workers decrypt, in
// order.
type parallelReader struct {
	ctx     context.Context
	queue   chan chan segment // the segments in order, up to 2 per worker ahead
	stop    chan struct{}
	wg      sync.WaitGroup
	counted func(n int64)
	header  int64 // the bytes before the payload's first chunk, counted first

	cur    []byte
	err    error
	closed bool
}

func (d *parallelReader) Read(p []byte) (int, error) {
	for len(d.cur) == 0 {
		if d.err != nil {
			return 0, d.err
		}
		next, ok := <-d.queue
		if !ok {
			d.err = io.EOF
			if err := d.ctx.Err(); err != nil {
				d.err = err
			}
			continue
		}
		s := <-next
		if s.err != nil {
			d.err = chunkError(s.err)
			if err := d.ctx.Err(); err != nil {
				d.err = err
			}
		}
		if len(s.buf) > 0 && d.counted != nil {
			d.counted(d.header + sealed(int64(len(s.buf))))
			d.header = 0
		}
		d.cur = s.buf
	}
	n := copy(p, d.cur)
	d.cur = d.cur[n:]
	return n, nil
}

// Close stops the workers and waits for them to end.
func (d *parallelReader) Close() error {
	if d.closed {
		return nil
	}
	d.closed = true
	close(d.stop)
	for next := range d.queue {
		<-next
	}
	d.wg.Wait()
	return nil
}

// decryptAtError says what an error of age.DecryptReaderAt means: a file
// cut short or damaged in its payload (a size that is no whole number of
// chunks, or a chunk, the last one included, that does not authenticate),
// else what decryptError says of age.Decrypt's errors (a wrong key, a
// header cut short, anything else).
func decryptAtError(err error) error {
	if msg := err.Error(); strings.Contains(msg, "chunk") || strings.Contains(msg, "payload size") {
		return fmt.Errorf("archive: %s: %w", damaged, chunkError(err))
	}
	return decryptError(err)
}

// ageChunkFailure is what age's reader in order says of a chunk that does
// not authenticate. age has no error value for it, nor the same words in
// its DecryptReaderAt, so chunkError tells the failure by its words.
const ageChunkFailure = "failed to decrypt and authenticate payload chunk, file may be corrupted or tampered with"

// chunkError is err in the words of age's reader in order when it is a
// chunk that fails to authenticate, whichever chunk it is: every reader
// says the same of the same file, and reading on, the entry it is in says
// the rest ("damaged or truncated: in NAME: …").
func chunkError(err error) error {
	if strings.Contains(err.Error(), "authenticate") {
		return errors.New(ageChunkFailure)
	}
	return err
}
