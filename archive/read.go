package archive

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"

	"filippo.io/age"
)

// damaged is what a read error in an archive means.
const damaged = "damaged or truncated"

// reader is an archive opened for reading: decrypted, with its manifest read
// and checked, positioned at its first data entry.
type reader struct {
	gz *gzip.Reader
	entries
	manifest Manifest
}

// open decrypts r with identities and reads the archive's manifest.
func open(r io.Reader, identities []age.Identity) (*reader, error) {
	plain, err := age.Decrypt(r, identities...)
	if err != nil {
		return nil, decryptError(err)
	}
	gz, err := gzip.NewReader(plain)
	if err != nil {
		return nil, fmt.Errorf("archive: %s: %w", damaged, err)
	}
	rd := &reader{gz: gz, entries: entries{tr: tar.NewReader(gz), bad: damaged}}
	if rd.manifest, err = rd.readManifest(); err != nil {
		return nil, err
	}
	return rd, nil
}

// decryptError explains an error from age.Decrypt.
func decryptError(err error) error {
	var noMatch *age.NoIdentityMatchError
	if errors.As(err, &noMatch) {
		return fmt.Errorf("archive: %w", ErrWrongPassphrase)
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
// stream, so that gzip's checksum and age's authentication of the end of the
// file are checked too.
func (rd *reader) walk(fn visit) (Summary, error) {
	sum, err := rd.entries.walk(fn)
	if err != nil {
		return Summary{}, err
	}
	if _, err := io.Copy(io.Discard, rd.gz); err != nil {
		return Summary{}, fmt.Errorf("archive: %s: after the last entry: %w", damaged, err)
	}
	return sum, nil
}

// Verify decrypts r with identities and reads the whole archive, checking it:
// that it decrypts (else the error wraps ErrWrongPassphrase); that gzip and tar
// are intact to the end; that manifest.json is the first entry and has format
// Format (a newer one was "written by a newer boxes") and a box name; and that
// every other entry
//   - is named "data" or under "data/" once cleaned, and is neither absolute
//     nor contains "..";
//   - is not a duplicate;
//   - is a directory, regular file, symlink (to anywhere), or hard link to an
//     earlier regular file under data/;
//   - is in a directory that is an earlier entry, so no entry goes through a
//     symlink (or file) made earlier in the archive;
//
// and that data/, data/home/ and data/home/agent/ are directories. Errors name
// the entry at fault.
func Verify(r io.Reader, identities ...age.Identity) (Manifest, Summary, error) {
	rd, err := open(r, identities)
	if err != nil {
		return Manifest{}, Summary{}, err
	}
	sum, err := rd.walk(func(h *tar.Header, body io.Reader) error {
		_, err := io.Copy(io.Discard, body)
		return err
	})
	if err != nil {
		return Manifest{}, Summary{}, err
	}
	return rd.manifest, sum, nil
}

// VerifyFile is Verify of the archive at path.
func VerifyFile(path string, identities ...age.Identity) (Manifest, Summary, error) {
	f, err := os.Open(path)
	if err != nil {
		return Manifest{}, Summary{}, err
	}
	defer f.Close()
	return Verify(f, identities...)
}

// Data decrypts r with identities and returns a reader of a plain tar stream
// of the archive's data entries ("data/", "data/home/", …; the manifest left
// out), in the shape the Docker engine's copy API takes for a copy to "/".
//
// The entries are checked on the fly by the same rules as Verify; a bad entry
// or a damaged archive is an error from Read, after the entries before it have
// been read. So call Verify first, before changing anything, and treat an
// error from Read as a failed restore. Close stops reading r; it returns once
// nothing reads r any more.
func Data(r io.Reader, identities ...age.Identity) (io.ReadCloser, error) {
	rd, err := open(r, identities)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.CloseWithError(rd.copyData(pw))
	}()
	return &dataReader{PipeReader: pr, done: done}, nil
}

// copyData writes the data entries to w as a tar stream.
func (rd *reader) copyData(w io.Writer) error {
	tw := tar.NewWriter(w)
	if _, err := rd.walk(func(h *tar.Header, body io.Reader) error {
		return copyEntry(tw, h, body)
	}); err != nil {
		return err
	}
	return tw.Close()
}

// dataReader is the reader Data returns.
type dataReader struct {
	*io.PipeReader
	done chan struct{}
}

// Close stops the copy and waits for it to end.
func (d *dataReader) Close() error {
	err := d.PipeReader.Close()
	<-d.done
	return err
}
