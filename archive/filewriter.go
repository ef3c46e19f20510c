package archive

import (
	"bufio"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"

	"filippo.io/age"
)

// FileWriter writes an archive to a file and reads the file back as it
// grows, so that once Close returns the file is proven to read back with
// the identity it was given, without a second read of the whole file after
// the write.
//
// What the read-back proves, and why it is as good as reading the archive
// again from the start with Verify: it reads the file itself (not the
// bytes in memory), decrypts it with the identity, every chunk
// authenticated up to the end of the encryption, and decompresses it (S2 checks every block's CRC-32C, zstd
// checks its frame's own checksum), and the plaintext it gets is byte for
// byte the tar that was compressed: of the same length and the same CRC-32C
// as the writer computed of it. That tar is the one the writer checked
// entry by entry, by the very rules Verify applies, and whose content
// hashes it computed from the same bytes that went into it; parsing and
// hashing an identical byte stream a second time finds the same. Tests
// check that what the writer writes passes Verify.
//
// The read-back runs beside the write, on the file as it is written, and
// reads it from the operating system's page cache: memory stays bounded
// (the file is never held), and on two cores or more most of its time is
// hidden behind the write.
type FileWriter struct {
	aw   *writer
	f    *os.File
	gw   *growWriter
	g    *growth
	back chan readBack
	done bool
}

// ErrReadBack is wrapped by the error Close returns when the file written
// does not read back.
var ErrReadBack = errors.New("the file written does not read back")

// readBack is what the read-back found: the plaintext's digest, or why it
// could not be read.
type readBack struct {
	plain digest
	err   error
}

// NewFileWriter starts writing an archive to f, a new empty file open for
// reading and writing, encrypted to recipients and read back with id
// (which must be able to decrypt it): see Write for what it holds. It
// writes the encryption's header, whose key derivation from a passphrase
// takes most of a second by design, so a caller may start it before the
// manifest is known. Call Copy once with the manifest and the data, then
// Close; or Abort on any error.
func NewFileWriter(f *os.File, id age.Identity, recipients ...age.Recipient) (*FileWriter, error) {
	return newFileWriter(f, id, startWriteback, recipients...)
}

// newFileWriter is NewFileWriter with writeback in startWriteback's place.
func newFileWriter(f *os.File, id age.Identity, writeback func(f *os.File, off, n int64), recipients ...age.Recipient) (*FileWriter, error) {
	g := newGrowth()
	fw := &FileWriter{f: f, g: g, gw: newGrowWriter(f, g, writeback), back: make(chan readBack, 1)}
	go func() { fw.back <- readFollowing(&follower{f: f, g: g}, id) }()
	aw, err := newWriter(fw.gw, compressS2, recipients)
	if err != nil {
		fw.stop(err)
		return nil, err
	}
	fw.aw = aw
	return fw, nil
}

// Copy writes the manifest of m and the data tar's entries (see Write),
// returning once data has been read to the end of its tar: the source can
// be let go then, before Close finishes the file.
func (fw *FileWriter) Copy(m Manifest, data io.Reader) (Summary, Dropped, error) {
	if err := fw.aw.begin(m); err != nil {
		return Summary{}, Dropped{}, err
	}
	return fw.aw.copy(data)
}

// Close finishes the archive, syncs the file to its disk, and waits for the
// read-back: an error means the file must not be published.
func (fw *FileWriter) Close() error {
	if fw.done {
		return errors.New("archive: the writer was closed already")
	}
	err := fw.aw.finish()
	if err == nil {
		err = fw.gw.flush()
	}
	fw.gw.stopWriteback()
	if err == nil {
		err = fw.f.Sync()
	}
	if err != nil {
		fw.aw.abort()
		fw.stop(err)
		return err
	}
	fw.done = true
	fw.g.end(nil)
	rb := <-fw.back
	if rb.err != nil {
		return fmt.Errorf("archive: %w: %w", ErrReadBack, rb.err)
	}
	if rb.plain != *fw.aw.plain {
		return fmt.Errorf("archive: %w: it holds %d bytes of tar (CRC-32C %08x), but %d (%08x) were written",
			ErrReadBack, rb.plain.n, rb.plain.crc, fw.aw.plain.n, fw.aw.plain.crc)
	}
	return nil
}

// Abort stops a write that failed, and the read-back.
func (fw *FileWriter) Abort() {
	if fw.done {
		return
	}
	fw.aw.abort()
	fw.stop(errors.New("the write stopped"))
}

// stop ends the read-back with err and waits for it, and the writebacks.
func (fw *FileWriter) stop(err error) {
	fw.gw.stopWriteback()
	fw.done = true
	fw.g.end(err)
	<-fw.back
}

// readFollowing decrypts and decompresses what r reads to its end, and
// returns the digest of the plaintext.
func readFollowing(r io.Reader, id age.Identity) readBack {
	br := bufio.NewReaderSize(r, 256<<10)
	plain, err := decryptAhead(br, id)
	if err != nil {
		return readBack{err: decryptError(err)}
	}
	defer plain.Close()
	rd, err := decompress(plain)
	if err != nil {
		return readBack{err: err}
	}
	defer rd.close()
	var d digest
	if _, err := io.Copy(&d, rd.plain); err != nil {
		return readBack{err: fmt.Errorf("%s: %w", damaged, err)}
	}
	// The decompressor reads to the end of the encryption, which checks
	// its last chunk; nothing may follow the compressed stream.
	if n, err := io.Copy(io.Discard, plain); err != nil || n > 0 {
		return readBack{err: fmt.Errorf("%s: %d bytes after the compressed data (%v)", damaged, n, err)}
	}
	return readBack{plain: d}
}

// digest is the length and CRC-32C of a byte stream.
type digest struct {
	n   int64
	crc uint32
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func (d *digest) Write(p []byte) (int, error) {
	d.crc = crc32.Update(d.crc, castagnoli, p)
	d.n += int64(len(p))
	return len(p), nil
}

// growth is how far a file has been written, for a reader that follows it.
type growth struct {
	mu   sync.Mutex
	cond *sync.Cond
	n    int64 // bytes written
	over bool  // no more will be written
	err  error // why, when the writer failed
}

func newGrowth() *growth {
	g := &growth{}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *growth) add(n int) {
	g.mu.Lock()
	g.n += int64(n)
	g.mu.Unlock()
	g.cond.Broadcast()
}

func (g *growth) end(err error) {
	g.mu.Lock()
	if !g.over {
		g.over, g.err = true, err
	}
	g.mu.Unlock()
	g.cond.Broadcast()
}

// growWriter writes to f in pieces of writeSize and tells g of each, and
// has the operating system start writing each writebackSize of the file
// to its disk as soon as it is written, so that the sync at the end waits
// for the last few pieces only, not for the whole file. (The encryption
// writes chunks of 64 KiB: written one by one, each is a system call and
// a wake-up of the read-back.)
type growWriter struct {
	f       *os.File
	g       *growth
	buf     []byte
	written int64 // to f
	kicked  int64 // of the file, the part whose writeback has been asked for

	// One goroutine starts the writebacks, beside the writes: the call
	// may wait for the disk's queue. While it waits, the next range grows
	// instead of queueing.
	writeback func(f *os.File, off, n int64)
	kicks     chan [2]int64 // offset and length, at most one waiting
	quit      chan struct{}
	quitOnce  sync.Once
	ended     chan struct{}
}

const (
	writeSize     = 1 << 20
	writebackSize = 8 << 20
)

func newGrowWriter(f *os.File, g *growth, writeback func(f *os.File, off, n int64)) *growWriter {
	w := &growWriter{f: f, g: g, buf: make([]byte, 0, writeSize), writeback: writeback,
		kicks: make(chan [2]int64, 1), quit: make(chan struct{}), ended: make(chan struct{})}
	go func() {
		defer close(w.ended)
		for {
			select {
			case r := <-w.kicks:
				w.writeback(f, r[0], r[1])
			case <-w.quit:
				return
			}
		}
	}()
	return w
}

func (w *growWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := copy(w.buf[len(w.buf):cap(w.buf)], p)
		w.buf, p, n = w.buf[:len(w.buf)+k], p[k:], n+k
		if len(w.buf) == cap(w.buf) {
			if err := w.flush(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// flush writes what is buffered to f.
func (w *growWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	n, err := w.f.Write(w.buf)
	w.written += int64(n)
	w.g.add(n)
	w.buf = w.buf[:0]
	if err != nil {
		return err
	}
	if w.written-w.kicked >= writebackSize {
		select {
		case w.kicks <- [2]int64{w.kicked, w.written - w.kicked}:
			w.kicked = w.written
		default: // the last one waits still: this range joins the next
		}
	}
	return nil
}

// stopWriteback ends the writebacks' goroutine and waits for it: the
// sync, or the removal of the file, is what follows. A writeback asked
// for and not started is left to the sync.
func (w *growWriter) stopWriteback() {
	w.quitOnce.Do(func() { close(w.quit) })
	<-w.ended
}

// follower reads f from its start as far as it has been written, waiting
// for more until the writer is over.
type follower struct {
	f   *os.File
	g   *growth
	off int64
}

func (r *follower) Read(p []byte) (int, error) {
	r.g.mu.Lock()
	for r.off >= r.g.n && !r.g.over {
		r.g.cond.Wait()
	}
	avail, err := r.g.n-r.off, r.g.err
	r.g.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if avail == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > avail {
		p = p[:avail]
	}
	n, err := r.f.ReadAt(p, r.off)
	r.off += int64(n)
	if n > 0 && err == io.EOF {
		err = nil
	}
	if n == 0 && err == io.EOF {
		err = io.ErrUnexpectedEOF // shorter than written
	}
	return n, err
}
