package archive

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
)

// ctxReader reads r until ctx is done, then fails every read with ctx's
// error.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// withContext returns r, read only until ctx is done. Wrapped around an
// archive's file, it stops every layer that reads from it (the decryption,
// the decompression, tar) at their next read of it; wrapped around an
// entry's content, it stops the copy of one large file at its next read,
// though the decompressor may still hold a block of it.
func withContext(ctx context.Context, r io.Reader) io.Reader {
	if ctx.Done() == nil { // never cancelled
		return r
	}
	return ctxReader{ctx: ctx, r: r}
}

// stoppable is fn, called for an entry only while ctx is not done, with
// the entry's content read only until it is: so a walk stops between
// entries too, when they come from data already decompressed.
func stoppable(ctx context.Context, fn visit) visit {
	return func(h *tar.Header, body io.Reader) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return fn(h, withContext(ctx, body))
	}
}

// stopped is the error of a read that failed once ctx was done: ctx's own,
// whatever the layers above the read made of it (to a decompressor, a
// failed read is a truncated stream; to age, a damaged one).
func stopped(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	return fmt.Errorf("archive: %w", ctx.Err())
}

// openContext is open of r read until ctx is done, given up when ctx is
// done before it returns (see openWithin). It reads r no more once given
// up.
func openContext(ctx context.Context, r io.Reader, opts Options) (*reader, error) {
	r = withContext(ctx, r)
	return openWithin(ctx, func() (*reader, error) { return open(r, opts) })
}

// openWithin is open, given up when ctx is done before it returns:
// deriving a passphrase's key takes about a second (more if the archive's
// header asks for it) and cannot be stopped. What it opens once given up
// is closed.
func openWithin(ctx context.Context, open func() (*reader, error)) (*reader, error) {
	if ctx.Done() == nil {
		return open()
	}
	type opened struct {
		rd  *reader
		err error
	}
	c := make(chan opened, 1)
	go func() {
		rd, err := open()
		c <- opened{rd, err}
	}()
	select {
	case o := <-c:
		return o.rd, stopped(ctx, o.err)
	case <-ctx.Done():
		go func() {
			if o := <-c; o.rd != nil {
				o.rd.close()
			}
		}()
		return nil, fmt.Errorf("archive: %w", ctx.Err())
	}
}
