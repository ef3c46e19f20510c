package archive

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"sync"
)

// entries is a tar stream of data entries being read and checked.
type entries struct {
	tr  *tar.Reader
	bad string // what a read error means, for its message
	chk checker

	// legacy maps the smolvm tool's "./…" names to "data/…", drops its
	// markers and reads its runtime manifest.
	legacy *legacy
	// hash, when set, hashes every regular file as it is read.
	hash *hasher
	// trailer: the stream must end with the content.sha256 entry, checked
	// against what hash computed.
	trailer bool
}

// visit is called for each accepted entry with its canonical header and, for
// a regular file, a reader of its content.
type visit func(h *tar.Header, body io.Reader) error

// walk reads every entry to the end of the stream, checks it, and calls fn
// with it; then it checks the layout. The first error stops the walk.
func (e *entries) walk(fn visit) (Summary, error) {
	if e.hash != nil {
		defer e.hash.wait() // its goroutine ends with the walk, whatever ends it
	}
	trailer := false
	for {
		h, err := e.tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Summary{}, fmt.Errorf("archive: %s: %w", e.bad, err)
		}
		if e.trailer && h.Name == trailerName {
			if err := e.readTrailer(h); err != nil {
				return Summary{}, err
			}
			trailer = true
			break
		}
		if e.legacy != nil {
			if err := e.legacy.rename(h); err != nil {
				return Summary{}, err
			}
		}
		out, err := e.chk.check(h)
		if err != nil {
			return Summary{}, err
		}
		if e.legacy != nil && e.legacy.drop(out) {
			e.chk.uncount(out)
			e.chk.sum.Dropped++
			continue
		}
		if err := e.visit(out, fn); err != nil {
			return Summary{}, err
		}
	}
	if e.trailer && !trailer {
		return Summary{}, fmt.Errorf("archive: %s: no %s entry at the end", damaged, trailerName)
	}
	if err := e.chk.finish(); err != nil {
		return Summary{}, err
	}
	return e.chk.sum, nil
}

// readTrailer checks the trailer entry h, which must be the last one.
func (e *entries) readTrailer(h *tar.Header) error {
	if h.Typeflag != tar.TypeReg {
		return fmt.Errorf("archive: %s is not a regular file", trailerName)
	}
	e.hash.wait()
	body := &bodyReader{r: e.tr}
	if err := checkTrailer(body, e.hash.list, e.chk.sum, e.hash.recorded); err != nil {
		if body.err != nil {
			return fmt.Errorf("archive: %s: in %s: %w", e.bad, trailerName, body.err)
		}
		return err
	}
	if _, err := e.tr.Next(); err != io.EOF {
		if err == nil {
			return fmt.Errorf("archive: entries after %s", trailerName)
		}
		return fmt.Errorf("archive: %s: %w", e.bad, err)
	}
	e.chk.sum.Hashed = len(e.hash.list)
	return nil
}

// visit calls fn for one entry, telling apart errors reading the entry's
// content (the stream is bad) from errors in what fn does with it.
func (e *entries) visit(h *tar.Header, fn visit) error {
	body := &bodyReader{r: e.tr}
	var r io.Reader = body
	var done func() error
	if e.hash != nil && h.Typeflag == tar.TypeReg {
		r, done = e.hash.wrap(h.Name, body)
	}
	var runtime *runtimeReader
	if e.legacy != nil && h.Typeflag == tar.TypeReg && h.Name == legacyRuntime {
		runtime = &runtimeReader{r: r}
		r = runtime
	}
	err := fn(h, r)
	if err == nil && done != nil {
		err = done()
	}
	if body.err != nil {
		return fmt.Errorf("archive: %s: in %s: %w", e.bad, h.Name, body.err)
	}
	if err != nil {
		return fmt.Errorf("archive: %s: %w", h.Name, err)
	}
	if runtime != nil {
		e.legacy.parseRuntime(runtime.buf)
	}
	return nil
}

// bodyReader reads an entry's content and remembers a read error.
type bodyReader struct {
	r   io.Reader
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		b.err = err
	}
	return n, err
}

// copyBufs are the buffers of copyAll.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// copyAll is io.Copy through a pooled buffer. io.Copy allocates a buffer
// for every call whose ends offer no shortcut (a tar writer, a hash, a
// file's generic ReadFrom): once per file of a tar of many small files,
// which made the collector a good part of a save's time.
func copyAll(dst io.Writer, src io.Reader) (int64, error) {
	if h, ok := src.(*hashingReader); ok {
		return h.copyTo(dst)
	}
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	return io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, *bp)
}
