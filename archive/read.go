package archive

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/klauspost/readahead"

	"filippo.io/age"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// damaged is what a read error in an archive means.
const damaged = "damaged or truncated"

// Options are what a reader needs besides the archive itself.
type Options struct {
	// Identities decrypt box archives. A PassphraseIdentity also opens the
	// smolvm tool's .tar.gz.gpg archives.
	Identities []age.Identity
	// MaxBytes, when not zero, bounds the total size of the data's regular
	// files: a larger archive is refused at the header of the first file
	// past it, before its content is read. The manifest's own Size bounds
	// it too. Use it for archives that declare no size (the legacy ones).
	MaxBytes int64
	// Progress, when set, watches the reading of an archive file by the
	// functions that take a path (VerifyFileWith, ExtractFile): it is given
	// what is being done ("verifying", "extracting"), the file's reader and
	// size, and returns the reader to use and a function called at the end.
	Progress func(what string, r io.Reader, size int64) (io.Reader, func())
	// RecordedHashes takes the content hashes of an archive that records
	// them (format 2 on) from its trailer instead of computing them again:
	// the trailer's names and totals are still checked against the
	// entries. For the check of a restore's archive before anything is
	// made: the restore's stream (Data) hashes the content as it sends it,
	// and fails at its end should any differ, a refused restore that
	// removes what it made. (Data ignores it.)
	RecordedHashes bool
	// Before, when set, writes entries that Data streams ahead of the
	// archive's (hb's quiesce marker, say, so that a restore cut short
	// leaves it).
	Before func(tw *tar.Writer) error
	// Owner, when set, gives the entries Data streams a box's owners
	// instead of the archive's: Home ("data/home/agent") and everything
	// under it belongs to UID and GID, the rest to root. (Setuid and setgid
	// bits are always dropped.)
	Owner *Owner
}

// Owner is the ownership of a box's data: see Options.Owner.
type Owner struct {
	Home     string
	UID, GID int
}

// set gives h the box's owner.
func (o *Owner) set(h *tar.Header) {
	name := strings.TrimSuffix(h.Name, "/")
	h.Uname, h.Gname = "", ""
	if name == o.Home || strings.HasPrefix(name, o.Home+"/") {
		h.Uid, h.Gid = o.UID, o.GID
		return
	}
	h.Uid, h.Gid = 0, 0
}

// openFile opens the archive at path for what, watched by opts.Progress,
// read until ctx is done: a box archive is decrypted on several cores
// (decryptFile), the smolvm tool's in order. done closes what it opened.
func openFile(ctx context.Context, path, what string, opts Options) (rd *reader, done func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	head := make([]byte, len(ageMagic))
	n, _ := f.ReadAt(head, 0)
	if !bytes.Equal(head[:n], ageMagic) {
		var r io.Reader = f
		stop := func() {}
		if opts.Progress != nil {
			r, stop = opts.Progress(what, f, size)
		}
		rd, err := openContext(ctx, r, opts)
		if err != nil {
			stop()
			f.Close()
			return nil, nil, err
		}
		return rd, func() { stop(); f.Close() }, nil
	}
	var counted func(int64)
	stop := func() {}
	if opts.Progress != nil {
		var r io.Reader
		r, stop = opts.Progress(what, countOnly{}, size)
		counted = readCount(r)
	}
	// What fails to open, or is given up, is closed by openPlain or
	// openWithin.
	rd, err = openWithin(ctx, func() (*reader, error) {
		plain, err := decryptFile(ctx, f, size, opts.Identities, counted)
		if err != nil {
			return nil, err
		}
		return openPlain(plain, opts)
	})
	if err != nil {
		stop()
		f.Close()
		return nil, nil, err
	}
	return rd, func() { rd.close(); stop(); f.Close() }, nil
}

// countOnly is a reader whose reads only count: what reads it is told the
// bytes, and gets none.
type countOnly struct{}

func (countOnly) Read(p []byte) (int, error) { return len(p), nil }

// readCount reads n bytes of r, a progress reader of countOnly, at each
// call: so the progress counts what another reader read.
func readCount(r io.Reader) func(n int64) {
	scratch := make([]byte, 256<<10)
	return func(n int64) {
		for n > 0 {
			k, err := r.Read(scratch[:min(n, int64(len(scratch)))])
			if err != nil {
				return
			}
			n -= int64(k)
		}
	}
}

// Magic numbers of what this package reads.
var (
	ageMagic  = []byte("age-encryption.org/")
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
	s2Magic   = []byte("\xff\x06\x00\x00S2sTwO") // the stream identifier chunk
)

// reader is an archive opened for reading: decrypted, with its manifest read
// and checked (for a box archive), positioned at its first data entry.
type reader struct {
	plain io.Reader // the decompressed tar stream
	close func()    // frees the decompressor
	entries
	manifest Manifest
}

// open decrypts r and, for a box archive, reads its manifest. It tells the
// formats apart by their first bytes: age's header or an OpenPGP packet, then
// gzip or zstd.
func open(r io.Reader, opts Options) (*reader, error) {
	br := bufio.NewReader(r)
	head, _ := br.Peek(len(ageMagic))
	if bytes.Equal(head, ageMagic) {
		return openBox(br, opts)
	}
	if len(head) > 0 && head[0]&0x80 != 0 {
		return openLegacy(br, opts)
	}
	return nil, errors.New("archive: not an archive: neither age-encrypted (a boxes archive) nor OpenPGP-encrypted (a smolvm archive)")
}

// openBox opens an age-encrypted box archive.
func openBox(r io.Reader, opts Options) (*reader, error) {
	plain, err := decryptAhead(r, opts.Identities...)
	if err != nil {
		return nil, decryptError(err)
	}
	return openPlain(plain, opts)
}

// openPlain opens a box archive from its decrypted stream, which the
// reader's close closes.
func openPlain(plain io.ReadCloser, opts Options) (*reader, error) {
	rd, err := decompress(plain)
	if err != nil {
		plain.Close()
		return nil, err
	}
	stop := rd.close
	rd.close = func() { stop(); plain.Close() }
	rd.entries = entries{tr: tar.NewReader(rd.plain), bad: damaged}
	if rd.manifest, err = rd.readManifest(); err != nil {
		rd.close()
		return nil, err
	}
	if rd.manifest.Format >= 2 {
		rd.hash = &hasher{recorded: opts.RecordedHashes}
		rd.trailer = true
	}
	rd.chk.setLimit(rd.manifest.Size, "the size its manifest declares")
	rd.chk.setLimit(opts.MaxBytes, "the bound set for it")
	return rd, nil
}

// decryptAhead decrypts r in a goroutine of its own, up to 2 MiB ahead of
// its reader, so that decryption and what reads its output (decompression,
// tar, hashes) share the cores: a check of 200 MiB of random data took
// 0.41 s read in one goroutine and 0.27 s so (BenchmarkArchive). Close
// stops it; it stops by itself at the end or at an error, which its reader
// gets after all that came before it.
func decryptAhead(r io.Reader, ids ...age.Identity) (io.ReadCloser, error) {
	plain, err := age.Decrypt(r, ids...)
	if err != nil {
		return nil, err
	}
	ra, err := readahead.NewReaderSize(plain, 8, 256<<10)
	// Read and Close only: its WriteTo reports io.EOF as an error once the
	// stream has ended, which io.Copy would pass on.
	return struct{ io.ReadCloser }{ra}, err
}

// openLegacy opens a smolvm tool's archive.
func openLegacy(r io.Reader, opts Options) (*reader, error) {
	plain, err := decryptLegacy(r, passphraseOf(opts.Identities))
	if err != nil {
		return nil, err
	}
	rd, err := decompress(plain)
	if err != nil {
		// OpenPGP does not check a passphrase before decrypting (on
		// purpose): a wrong one gives garbage, seen first here.
		return nil, fmt.Errorf("archive: %w (or the archive is damaged: %v)", ErrWrongPassphrase, err)
	}
	rd.entries = entries{tr: tar.NewReader(rd.plain), bad: damaged, legacy: &legacy{}}
	rd.chk.setLimit(opts.MaxBytes, "the bound set for it")
	return rd, nil
}

// decompress starts decompressing plain, S2, zstd or gzip by its magic
// number.
func decompress(plain io.Reader) (*reader, error) {
	br := bufio.NewReaderSize(plain, 64<<10)
	head, err := br.Peek(len(s2Magic))
	if err != nil && len(head) < 2 {
		return nil, fmt.Errorf("archive: %s: %w", damaged, noEOF(err))
	}
	switch {
	case bytes.HasPrefix(head, s2Magic):
		// Blocks no larger than the writer's, so memory stays small
		// whatever the archive claims; each block's CRC-32C is checked.
		return &reader{plain: s2.NewReader(br, s2.ReaderMaxBlockSize(s2BlockSize)), close: func() {}}, nil
	case bytes.HasPrefix(head, zstdMagic):
		// A bounded window, so memory stays small whatever the archive
		// claims; two decoder goroutines (one is five times slower).
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(2), zstd.WithDecoderMaxWindow(64<<20), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, fmt.Errorf("archive: %s: %w", damaged, err)
		}
		return &reader{plain: zr, close: zr.Close}, nil
	case bytes.HasPrefix(head, gzipMagic):
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("archive: %s: %w", damaged, err)
		}
		return &reader{plain: gz, close: func() {}}, nil
	}
	return nil, fmt.Errorf("archive: %s: the decrypted content is neither S2, zstd nor gzip", damaged)
}

// noEOF turns a premature end into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// decryptError explains an error from age.Decrypt.
func decryptError(err error) error {
	var noMatch *age.NoIdentityMatchError
	if errors.As(err, &noMatch) {
		return fmt.Errorf("archive: %w", ErrWrongPassphrase)
	}
	// age's own words for a header cut short or unreadable ("failed to
	// read header: …") say nothing of a file that is damaged.
	if strings.Contains(err.Error(), "failed to read header") {
		return fmt.Errorf("archive: %s: decrypting: %w", damaged, err)
	}
	return fmt.Errorf("archive: decrypting: %w", err)
}

// readManifest reads and checks the first entry, which must be manifest.json.
func (rd *reader) readManifest() (Manifest, error) {
	h, err := rd.tr.Next()
	if err == io.EOF {
		return Manifest{}, fmt.Errorf("archive: no %s: the archive is empty", manifestName)
	}
	if err != nil {
		return Manifest{}, fmt.Errorf("archive: %s: %w", damaged, err)
	}
	if h.Name != manifestName {
		return Manifest{}, fmt.Errorf("archive: first entry is %q, not %s", h.Name, manifestName)
	}
	if h.Typeflag != tar.TypeReg || h.Size > maxManifestSize {
		return Manifest{}, fmt.Errorf("archive: %s is not a small regular file", manifestName)
	}
	b, err := io.ReadAll(rd.tr)
	if err != nil {
		return Manifest{}, fmt.Errorf("archive: %s: in %s: %w", damaged, manifestName, err)
	}
	return parseManifest(b)
}

// walk walks the data entries (see entries.walk), then reads the rest of the
// stream, so that the compression's checksum and the encryption's
// authentication of the end of the file are checked too.
func (rd *reader) walk(fn visit) (Summary, error) {
	defer rd.close()
	sum, err := rd.entries.walk(fn)
	if err != nil {
		return Summary{}, err
	}
	if _, err := io.Copy(io.Discard, rd.plain); err != nil {
		return Summary{}, fmt.Errorf("archive: %s: after the last entry: %w", damaged, err)
	}
	if rd.legacy != nil {
		rd.manifest = rd.legacy.manifest()
	}
	return sum, nil
}

// Verify decrypts r with identities and reads the whole archive, checking it:
// that it decrypts (else the error wraps ErrWrongPassphrase); that the
// compression and tar are intact to the end; that manifest.json is the first
// entry and has a format up to Format (a newer one was "written by a newer
// boxes") and a box name; and that every other entry
//   - is named "data" or under "data/" once cleaned, and is neither absolute
//     nor contains "..";
//   - has no path component over 255 bytes and no path over 4095;
//   - is not a duplicate;
//   - is a directory, regular file, symlink (to anywhere), or hard link to an
//     earlier regular file under data/;
//   - is in a directory that is an earlier entry, so no entry goes through a
//     symlink (or file) made earlier in the archive;
//   - has no extended attributes;
//   - does not take the data past the size the manifest declares;
//
// that data/, data/home/ and data/home/agent/ are directories; and, from
// format 2 on, that every regular file has the content hash recorded for it.
// A legacy archive is checked by the same rules once its names are mapped to
// data/. Errors name the entry at fault.
func Verify(r io.Reader, identities ...age.Identity) (Manifest, Summary, error) {
	return VerifyWith(r, Options{Identities: identities})
}

// VerifyWith is Verify with options.
func VerifyWith(r io.Reader, opts Options) (Manifest, Summary, error) {
	return VerifyContext(context.Background(), r, opts)
}

// VerifyContext is VerifyWith until ctx is done: then it stops at its next
// read of r or of an entry and returns an error wrapping ctx.Err(). Should
// ctx be done while the archive's key is derived, it returns at once, and a
// read of r under way may end after it has returned.
func VerifyContext(ctx context.Context, r io.Reader, opts Options) (Manifest, Summary, error) {
	rd, err := openContext(ctx, r, opts)
	if err != nil {
		return Manifest{}, Summary{}, err
	}
	return verifyOpened(ctx, rd)
}

// verifyOpened reads the opened archive rd to its end, until ctx is done.
func verifyOpened(ctx context.Context, rd *reader) (Manifest, Summary, error) {
	sum, err := rd.walk(stoppable(ctx, func(h *tar.Header, body io.Reader) error {
		_, err := io.Copy(io.Discard, body)
		return err
	}))
	if err != nil {
		return Manifest{}, Summary{}, stopped(ctx, err)
	}
	return rd.manifest, sum, nil
}

// VerifyFile is Verify of the archive at path. For a legacy archive whose
// runtime manifest names no box, the box is the one in the file name.
func VerifyFile(path string, identities ...age.Identity) (Manifest, Summary, error) {
	return VerifyFileWith(path, Options{Identities: identities})
}

// VerifyFileWith is VerifyFile with options.
func VerifyFileWith(path string, opts Options) (Manifest, Summary, error) {
	return VerifyFileContext(context.Background(), path, opts)
}

// VerifyFileContext is VerifyFileWith until ctx is done (see VerifyContext).
func VerifyFileContext(ctx context.Context, path string, opts Options) (Manifest, Summary, error) {
	rd, done, err := openFile(ctx, path, "verifying", opts)
	if err != nil {
		return Manifest{}, Summary{}, err
	}
	defer done()
	m, sum, err := verifyOpened(ctx, rd)
	if err == nil && m.Box == "" {
		m.Box = BoxFromName(path)
	}
	return m, sum, err
}

// Data decrypts r with identities and returns a reader of a plain tar stream
// of the archive's data entries ("data/", "data/home/", …; the manifest left
// out), in the shape the Docker engine's copy API takes for a copy to "/".
//
// The entries are checked on the fly by the same rules as Verify, the
// content hashes of an archive that records them (format 2 on) included:
// each file is hashed as it streams, and the stream fails at its end, when
// the trailer is read, should any differ. A bad entry or a damaged archive
// is an error from Read, after the entries before it have been read. So
// call Verify first, before changing anything, and treat an error from Read
// as a failed restore. Close stops reading r; it returns once nothing reads
// r any more.
func Data(r io.Reader, identities ...age.Identity) (io.ReadCloser, error) {
	return DataWith(r, Options{Identities: identities})
}

// DataWith is Data with options.
func DataWith(r io.Reader, opts Options) (io.ReadCloser, error) {
	return OpenData(r, opts)
}

// OpenData is DataWith, whose reader also tells what it streamed once it
// was read to its end (see DataReader.Contents).
func OpenData(r io.Reader, opts Options) (*DataReader, error) {
	opts.RecordedHashes = false
	rd, err := open(r, opts)
	if err != nil {
		return nil, err
	}
	pipe := newRoomyPipe(8, 256<<10)
	d := &DataReader{pipe: pipe, done: make(chan struct{})}
	go func() {
		defer close(d.done)
		contents := newContents()
		_, err := rd.copyData(pipe, opts.Before, opts.Owner, contents)
		if err == nil {
			d.contents = contents
		}
		d.err = err
		pipe.CloseWithError(err)
	}()
	return d, nil
}

// copyData writes the data entries to w as a tar stream, and records them
// in c.
func (rd *reader) copyData(w io.Writer, before func(*tar.Writer) error, owner *Owner, c *Contents) (Summary, error) {
	tw := tar.NewWriter(w)
	if before != nil {
		if err := before(tw); err != nil {
			rd.close()
			return Summary{}, err
		}
	}
	sum, err := rd.walk(func(h *tar.Header, body io.Reader) error {
		if owner != nil {
			owner.set(h)
		}
		c.add(h)
		return copyEntry(tw, h, body)
	})
	if err != nil {
		return Summary{}, err
	}
	return sum, tw.Close()
}

// DataReader is the reader OpenData returns.
type DataReader struct {
	pipe     *roomyPipe
	done     chan struct{}
	contents *Contents
	err      error
}

func (d *DataReader) Read(p []byte) (int, error) { return d.pipe.Read(p) }

// Close stops the copy and waits for it to end.
func (d *DataReader) Close() error {
	err := d.pipe.Close()
	<-d.done
	return err
}

// Contents are the entries streamed, once the stream was read to its end
// (or closed) and its content found to have the hashes the archive records
// (from format 2 on; older ones record none). It waits for the copy to end,
// so call it only after reading to the end or Close.
func (d *DataReader) Contents() (*Contents, error) {
	<-d.done
	if d.err != nil {
		return nil, d.err
	}
	if d.contents == nil {
		return nil, errors.New("archive: the data was not read to its end")
	}
	return d.contents, nil
}
