package archive

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
)

// entries is a tar stream of data entries being read and checked.
type entries struct {
	tr  *tar.Reader
	bad string // what a read error means, for its message
	chk checker
}

// visit is called for each accepted entry with its canonical header and, for
// a regular file, a reader of its content.
type visit func(h *tar.Header, body io.Reader) error

// walk reads every entry to the end of the stream, checks it, and calls fn
// with it; then it checks the layout. The first error stops the walk.
func (e *entries) walk(fn visit) (Summary, error) {
	for {
		h, err := e.tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Summary{}, fmt.Errorf("archive: %s: %w", e.bad, err)
		}
		out, err := e.chk.check(h)
		if err != nil {
			return Summary{}, err
		}
		if err := e.visit(out, fn); err != nil {
			return Summary{}, err
		}
	}
	if err := e.chk.finish(); err != nil {
		return Summary{}, err
	}
	return e.chk.sum, nil
}

// visit calls fn for one entry, telling apart errors reading the entry's
// content (the stream is bad) from errors in what fn does with it.
func (e *entries) visit(h *tar.Header, fn visit) error {
	body := &bodyReader{r: e.tr}
	err := fn(h, body)
	if body.err != nil {
		return fmt.Errorf("archive: %s: in %s: %w", e.bad, h.Name, body.err)
	}
	if err != nil {
		return fmt.Errorf("archive: %s: %w", h.Name, err)
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
