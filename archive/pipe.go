package archive

import (
	"io"
	"sync"
)

// roomyPipe is an io.Pipe with room: the writer fills buffers and hands
// each over whole, up to a few ahead of the reader, so that making a
// stream and sending it (to the engine, say) run side by side on two
// cores, instead of each waiting for the other as an io.Pipe's ends do.
// Large buffers also keep a tar of many small files from crossing in
// pieces of a few hundred bytes, each a round of system calls.
type roomyPipe struct {
	full chan []byte // handed over, in order
	free chan []byte // to fill

	// The writer's.
	fill []byte
	err  error // how the writer closed; set before full is closed

	// The reader's.
	cur, buf []byte
	gone     chan struct{} // closed when the reader closes
	goneOnce sync.Once
}

// newRoomyPipe makes a pipe of n buffers of size bytes.
func newRoomyPipe(n, size int) *roomyPipe {
	p := &roomyPipe{full: make(chan []byte, n), free: make(chan []byte, n), gone: make(chan struct{})}
	for range n {
		p.free <- make([]byte, 0, size)
	}
	return p
}

// Write copies b into the pipe's buffers, waiting for one to be free when
// all are full; it fails with io.ErrClosedPipe once the reader has closed.
func (p *roomyPipe) Write(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		if p.fill == nil {
			select {
			case p.fill = <-p.free:
			case <-p.gone:
				return n, io.ErrClosedPipe
			}
		}
		k := copy(p.fill[len(p.fill):cap(p.fill)], b)
		p.fill = p.fill[:len(p.fill)+k]
		b, n = b[k:], n+k
		if len(p.fill) == cap(p.fill) {
			p.full <- p.fill // never blocks: full has room for every buffer
			p.fill = nil
		}
	}
	return n, nil
}

// CloseWithError hands over what is left and ends the stream: the reader
// reads err after it, io.EOF when err is nil. Call it once.
func (p *roomyPipe) CloseWithError(err error) {
	if len(p.fill) > 0 {
		p.full <- p.fill
		p.fill = nil
	}
	if err == nil {
		err = io.EOF
	}
	p.err = err
	close(p.full)
}

func (p *roomyPipe) Read(b []byte) (int, error) {
	for len(p.cur) == 0 {
		if p.buf != nil {
			p.free <- p.buf[:0]
			p.buf = nil
		}
		next, ok := <-p.full
		if !ok {
			return 0, p.err
		}
		p.cur, p.buf = next, next
	}
	n := copy(b, p.cur)
	p.cur = p.cur[n:]
	return n, nil
}

// Close ends the reading: the writer's next wait for room fails.
func (p *roomyPipe) Close() error {
	p.goneOnce.Do(func() { close(p.gone) })
	return nil
}
