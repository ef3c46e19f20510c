package archive

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// trailerName is the last entry of an archive from format 2 on: the content
// hashes of its regular files, in archive order, and its totals. Its text is
//
//	boxes-content 1
//	sha256 HEX "data/home/agent/.bashrc"
//	…
//	total FILES BYTES
//
// with each name quoted as Go quotes strings, so any name fits on one line.
const trailerName = "content.sha256"

// trailerHeader is the first line of the trailer.
const trailerHeader = "boxes-content 1"

// fileHash is the recorded or computed hash of one regular file.
type fileHash struct {
	name string
	sum  [sha256.Size]byte
}

// hasher computes the hash of every regular file's content as it is read,
// in a goroutine of its own: the reader only copies what it reads into the
// hasher's buffers, so that hashing (SHA-256 runs at about 1.3 GB/s, most
// of a stream's own work) and what the stream does with the content (send
// it to the engine, compress and encrypt it) share the cores. Its list is
// complete once wait has returned.
type hasher struct {
	list []fileHash
	// recorded: the hashes are not computed but taken from the trailer,
	// whose names are still checked against the entries read. For the
	// check of a whole archive before a restore, whose stream then
	// computes them and checks them against the trailer as it goes.
	recorded bool

	work    chan hashPiece // to the hashing goroutine, in order
	free    chan []byte    // its buffers, back from it
	done    chan struct{}  // closed when the goroutine has ended
	fill    []byte         // the buffer being filled
	ends    []fileEnd      // of the files ended in fill
	handed  int            // buffers handed over
	stopped bool           // work is closed
}

// hashPiece is content of the files being hashed, in order: ends marks
// where in buf each file that ends in it ends.
type hashPiece struct {
	buf  []byte
	ends []fileEnd
}

// fileEnd is the end of the file named name at offset at of a piece.
type fileEnd struct {
	at   int
	name string
}

// hashBuffers and hashBufferSize bound what the reader may be ahead of the
// hashing: 8 buffers of 256 KiB. A buffer holds the content of as many
// files as fit, so that a tree of small files is handed over a buffer at
// a time, not a file at a time: every hand-over may wake the hashing
// goroutine, which costs more than hashing a small file.
const (
	hashBuffers    = 8
	hashBufferSize = 256 << 10
)

// start starts the hashing goroutine, once.
func (hs *hasher) start() {
	if hs.work != nil {
		return
	}
	hs.work = make(chan hashPiece, hashBuffers)
	hs.free = make(chan []byte, hashBuffers)
	hs.done = make(chan struct{})
	for range hashBuffers {
		hs.free <- make([]byte, 0, hashBufferSize)
	}
	go func() {
		defer close(hs.done)
		h := sha256.New()
		for p := range hs.work {
			from := 0
			for _, e := range p.ends {
				h.Write(p.buf[from:e.at])
				from = e.at
				fh := fileHash{name: e.name}
				h.Sum(fh.sum[:0])
				hs.list = append(hs.list, fh)
				h.Reset()
			}
			h.Write(p.buf[from:])
			hs.free <- p.buf[:0]
		}
	}()
}

// room is the free part of the buffer being filled: a full one is handed
// over first, and a free one taken when none is being filled. What is put
// there counts once hs.fill is grown over it.
func (hs *hasher) room() []byte {
	if hs.fill != nil && len(hs.fill) == cap(hs.fill) {
		hs.handOver()
	}
	if hs.fill == nil {
		hs.fill = <-hs.free
	}
	return hs.fill[len(hs.fill):cap(hs.fill)]
}

// add copies b into the buffers.
func (hs *hasher) add(b []byte) {
	for len(b) > 0 {
		k := copy(hs.room(), b)
		hs.fill, b = hs.fill[:len(hs.fill)+k], b[k:]
	}
}

// end marks the end of the file named name, in the buffer being filled.
func (hs *hasher) end(name string) {
	if hs.fill == nil {
		hs.fill = <-hs.free
	}
	hs.ends = append(hs.ends, fileEnd{at: len(hs.fill), name: name})
}

// handOver hands the buffer being filled over to the hashing goroutine,
// with the ends of files in it.
func (hs *hasher) handOver() {
	hs.work <- hashPiece{buf: hs.fill, ends: hs.ends}
	hs.fill, hs.ends = nil, nil
	hs.handed++
}

// wait ends the hashing once all handed over is hashed: list is complete.
// A file not ended (a walk that stopped in it) is dropped. It may be called
// more than once.
func (hs *hasher) wait() {
	if hs.work == nil || hs.stopped {
		return
	}
	hs.stopped = true
	if hs.fill != nil {
		hs.handOver()
	}
	close(hs.work)
	<-hs.done
}

// wrap returns a reader of body whose content is hashed, and a function
// that drains the rest of body and records the hash under name.
func (hs *hasher) wrap(name string, body io.Reader) (io.Reader, func() error) {
	if hs.recorded {
		return body, func() error {
			hs.list = append(hs.list, fileHash{name: name})
			return nil
		}
	}
	hs.start()
	r := &hashingReader{r: body, hs: hs}
	return r, func() error {
		if _, err := r.copyTo(io.Discard); err != nil {
			return err
		}
		hs.end(name)
		return nil
	}
}

// hashingReader hands what it reads to its hasher.
type hashingReader struct {
	r  io.Reader
	hs *hasher
}

func (h *hashingReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.hs.add(p[:n])
	return n, err
}

// copyTo copies the rest of the file to dst, read straight into the
// hashing's buffers: what Read hands the hashing is a copy of what it
// read, one more pass over every byte of the stream. dst must not keep
// what it is given (io.Writer's rule), for the hashing reads it later.
func (h *hashingReader) copyTo(dst io.Writer) (int64, error) {
	hs := h.hs
	var n int64
	for {
		room := hs.room()
		from := len(hs.fill)
		k, err := h.r.Read(room)
		if k > 0 {
			hs.fill = hs.fill[:from+k]
			if _, werr := dst.Write(hs.fill[from : from+k]); werr != nil {
				return n, werr
			}
			n += int64(k)
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// writeTrailer writes the trailer entry for hashes and sum to tw.
func writeTrailer(tw *tar.Writer, hashes []fileHash, sum Summary, mtime time.Time) error {
	var b bytes.Buffer
	b.WriteString(trailerHeader + "\n")
	for _, fh := range hashes {
		fmt.Fprintf(&b, "sha256 %s %s\n", hex.EncodeToString(fh.sum[:]), strconv.Quote(fh.name))
	}
	fmt.Fprintf(&b, "total %d %d\n", sum.Files, sum.Bytes)
	h := &tar.Header{Typeflag: tar.TypeReg, Name: trailerName, Mode: 0o644, Size: int64(b.Len()), ModTime: mtime}
	if err := tw.WriteHeader(h); err != nil {
		return fmt.Errorf("archive: %s: %w", trailerName, err)
	}
	if _, err := tw.Write(b.Bytes()); err != nil {
		return fmt.Errorf("archive: %s: %w", trailerName, err)
	}
	return nil
}

// checkTrailer reads the trailer from r and checks it line by line against
// the hashes computed while reading and the summary: every regular file must
// have its recorded content, in order, and nothing more or less. With
// adopt, computed holds names only: the names are checked, and the
// recorded hashes filled in.
func checkTrailer(r io.Reader, computed []fileHash, sum Summary, adopt bool) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("archive: %s: "+format, append([]any{trailerName}, args...)...)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4*maxPathBytes+128)
	if !sc.Scan() || sc.Text() != trailerHeader {
		return bad("no %q line first", trailerHeader)
	}
	i := 0
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "total "); ok {
			var files int
			var bytes int64
			if _, err := fmt.Sscanf(rest, "%d %d", &files, &bytes); err != nil {
				return bad("bad line %q", line)
			}
			if i != len(computed) {
				return bad("records %d files, but the archive holds %d", i, len(computed))
			}
			if files != sum.Files || bytes != sum.Bytes {
				return bad("records %d files and %d bytes, but the archive holds %d and %d", files, bytes, sum.Files, sum.Bytes)
			}
			if sc.Scan() {
				return bad("more after the total")
			}
			return sc.Err()
		}
		f := strings.SplitN(line, " ", 3)
		if len(f) != 3 || f[0] != "sha256" {
			return bad("bad line %.80q", line)
		}
		name, err := strconv.Unquote(f[2])
		if err != nil {
			return bad("bad name in line %.80q", line)
		}
		var want [sha256.Size]byte
		if len(f[1]) != 2*sha256.Size {
			return bad("bad hash in line %.80q", line)
		}
		if _, err := hex.Decode(want[:], []byte(f[1])); err != nil {
			return bad("bad hash in line %.80q", line)
		}
		if i >= len(computed) {
			return bad("records %s, which the archive does not hold", name)
		}
		got := computed[i]
		if got.name != name {
			return bad("records %s where the archive holds %s", name, got.name)
		}
		if adopt {
			computed[i].sum = want
		} else if got.sum != want {
			return fmt.Errorf("archive: %s: the content of %s does not match its recorded hash: the archive is damaged", damaged, name)
		}
		i++
	}
	if err := sc.Err(); err != nil {
		return bad("%v", err)
	}
	return bad("no total line: cut short")
}
