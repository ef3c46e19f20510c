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

// hasher computes the hash of an entry's content as it is read.
type hasher struct {
	list []fileHash
	// recorded: the hashes are not computed but taken from the trailer,
	// whose names are still checked against the entries read. For the
	// check of a whole archive before a restore, whose stream then
	// computes them and checks them against the trailer as it goes.
	recorded bool
}

// wrap returns a reader of body that hashes it, and a function that drains
// the rest of body and records the hash under name.
func (hs *hasher) wrap(name string, body io.Reader) (io.Reader, func() error) {
	if hs.recorded {
		return body, func() error {
			hs.list = append(hs.list, fileHash{name: name})
			return nil
		}
	}
	h := sha256.New()
	r := io.TeeReader(body, h)
	return r, func() error {
		if _, err := io.Copy(io.Discard, r); err != nil {
			return err
		}
		fh := fileHash{name: name}
		h.Sum(fh.sum[:0])
		hs.list = append(hs.list, fh)
		return nil
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
