package archive

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"filippo.io/age"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// Write reads the engine's tar of a box's /data from data (entries "data/",
// "data/home/", …) and writes an archive of it to w, encrypted to recipients:
// an S2-compressed tar (format 3) whose first entry is manifest.json (m, with Format
// set and Created in UTC, now if zero), followed by data's entries and the
// content.sha256 trailer that records the hash of every regular file.
//
// Each entry is checked by the same rules as Verify as it is copied, but
// extended attributes are dropped rather than refused (the engine's restore
// would refuse them; Dropped tells how many) and setuid and setgid bits are
// cleared. Data that grows past m.Size, when set, is refused. A bad entry,
// or any other error, fails Write before the encryption is finished, so what
// was written to w by then is never a readable archive.
func Write(w io.Writer, m Manifest, data io.Reader, recipients ...age.Recipient) (Summary, error) {
	sum, _, err := write(w, m, data, compressS2, recipients)
	return sum, err
}

// Dropped is the count of extended attributes a Write left out.
type Dropped struct{ Xattrs int }

// WriteReport is Write that also tells what it dropped.
func WriteReport(w io.Writer, m Manifest, data io.Reader, recipients ...age.Recipient) (Summary, Dropped, error) {
	return write(w, m, data, compressS2, recipients)
}

// compression is how the tar of an archive is compressed; each is the
// compression of one format, which the manifest records.
type compression int

const (
	compressS2   compression = iota // format 3's, written now
	compressZstd                    // format 2's
	compressGzip                    // format 1's
)

// format is the manifest format of archives compressed with c.
func (c compression) format() int {
	switch c {
	case compressGzip:
		return 1
	case compressZstd:
		return 2
	}
	return Format
}

// compressor returns a writer compressing to w.
func (c compression) compressor(w io.Writer) (io.WriteCloser, error) {
	switch c {
	case compressGzip:
		return gzip.NewWriter(w), nil
	case compressZstd:
		return zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(8<<20))
	}
	// S2 (Snappy's successor, with a CRC-32C of every block): on a tree of
	// source files four to five times as fast as zstd's fastest level, and
	// over three times as fast on incompressible data, for an archive about
	// 1.6 times the size; it decompresses three to four times as fast. One
	// encoder goroutine: the engine's stream, the hashing, the encryption
	// and the read-back share the cores. Blocks of 1 MiB bound the memory
	// of writer and reader alike.
	return s2.NewWriter(w, s2.WriterConcurrency(1), s2.WriterBlockSize(s2BlockSize)), nil
}

// s2BlockSize is the largest block of the S2 streams this package writes
// and reads.
const s2BlockSize = 1 << 20

func write(w io.Writer, m Manifest, data io.Reader, c compression, recipients []age.Recipient) (Summary, Dropped, error) {
	if _, err := prepare(m, c.format()); err != nil {
		return Summary{}, Dropped{}, err
	}
	aw, err := newWriter(w, c, recipients)
	if err != nil {
		return Summary{}, Dropped{}, err
	}
	err = aw.begin(m)
	var sum Summary
	var dropped Dropped
	if err == nil {
		sum, dropped, err = aw.copy(data)
	}
	if err == nil {
		err = aw.finish()
	}
	if err != nil {
		aw.abort()
		return Summary{}, Dropped{}, err
	}
	return sum, dropped, nil
}

// writer is one archive being written: the encryption's header first
// (newWriter), then the manifest (begin), the data (copy), and the trailer
// and the ends of the compression and the encryption (finish).
type writer struct {
	c      compression
	m      Manifest
	enc    io.WriteCloser
	zw     io.WriteCloser
	tw     *tar.Writer
	plain  *digest // what went into the compressor
	hashes []fileHash
	sum    Summary
}

// newWriter starts an archive on w, encrypted to recipients: age writes
// its header (a passphrase's key derivation, most of a second by design,
// happens here), before the manifest is known.
func newWriter(w io.Writer, c compression, recipients []age.Recipient) (*writer, error) {
	enc, err := age.Encrypt(w, recipients...)
	if err != nil {
		return nil, fmt.Errorf("archive: encrypting: %w", err)
	}
	zw, err := c.compressor(enc)
	if err != nil {
		return nil, fmt.Errorf("archive: compressing: %w", err)
	}
	aw := &writer{c: c, enc: enc, zw: zw, plain: &digest{}}
	aw.tw = tar.NewWriter(io.MultiWriter(aw.plain, zw))
	return aw, nil
}

// begin writes the manifest of m, the archive's first entry.
func (aw *writer) begin(m Manifest) error {
	m, err := prepare(m, aw.c.format())
	if err != nil {
		return err
	}
	aw.m = m
	return writeManifest(aw.tw, m)
}

// copy writes data's entries, checked, and hashes every regular file.
func (aw *writer) copy(data io.Reader) (Summary, Dropped, error) {
	in := entries{tr: tar.NewReader(data), bad: "reading the data tar", hash: &hasher{}}
	in.chk.dropXattrs = true
	in.chk.setLimit(aw.m.Size, "the size declared in its manifest")
	sum, err := in.walk(func(h *tar.Header, body io.Reader) error {
		return copyEntry(aw.tw, h, body)
	})
	if err != nil {
		return Summary{}, Dropped{}, err
	}
	sum.Hashed = len(in.hash.list)
	aw.hashes, aw.sum = in.hash.list, sum
	return sum, Dropped{Xattrs: in.chk.xattrs}, nil
}

// finish writes the trailer (from format 2 on) and ends the tar, the
// compression and the encryption.
func (aw *writer) finish() error {
	if aw.m.Format >= 2 { // format 1 had no trailer
		if err := writeTrailer(aw.tw, aw.hashes, aw.sum, aw.m.Created); err != nil {
			return err
		}
	}
	for _, c := range []io.Closer{aw.tw, aw.zw, aw.enc} {
		if err := c.Close(); err != nil {
			return fmt.Errorf("archive: writing: %w", err)
		}
	}
	return nil
}

// abort frees the compressor of a write that failed; what was written is
// never a readable archive, since the encryption was not finished.
func (aw *writer) abort() {
	// (S2's writer, with one goroutine, runs none of its own.)
	if z, ok := aw.zw.(*zstd.Encoder); ok {
		z.Reset(io.Discard)
		z.Close()
	}
}

// prepare returns the manifest to write for m, or why it can't be written.
func prepare(m Manifest, format int) (Manifest, error) {
	if m.Box == "" {
		return Manifest{}, errors.New("archive: manifest has no box name")
	}
	if m.Size < 0 {
		return Manifest{}, errors.New("archive: manifest has a negative size")
	}
	m.Format = format
	if m.Created.IsZero() {
		m.Created = time.Now()
	}
	m.Created = m.Created.UTC()
	return m, nil
}

// writeManifest writes m as the manifest.json entry.
func writeManifest(tw *tar.Writer, m Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("archive: %s: %w", manifestName, err)
	}
	b = append(b, '\n')
	h := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     manifestName,
		Mode:     0o644,
		Size:     int64(len(b)),
		ModTime:  m.Created,
	}
	if err := tw.WriteHeader(h); err != nil {
		return fmt.Errorf("archive: %s: %w", manifestName, err)
	}
	if _, err := tw.Write(b); err != nil {
		return fmt.Errorf("archive: %s: %w", manifestName, err)
	}
	return nil
}

// copyEntry writes one entry, and a regular file's content, to tw.
func copyEntry(tw *tar.Writer, h *tar.Header, body io.Reader) error {
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if h.Typeflag == tar.TypeReg {
		if _, err := copyAll(tw, body); err != nil {
			return err
		}
	}
	return nil
}
