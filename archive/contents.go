package archive

import (
	"archive/tar"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
)

// Contents are the content hashes of an archive's regular files, by data
// name ("data/home/agent/.bashrc"): what a restored copy is checked against.
type Contents struct {
	hashes  map[string][sha256.Size]byte
	Summary Summary
}

func newContents(list []fileHash, sum Summary) *Contents {
	c := &Contents{hashes: make(map[string][sha256.Size]byte, len(list)), Summary: sum}
	for _, fh := range list {
		c.hashes[fh.name] = fh.sum
	}
	c.Summary.Hashed = len(list)
	return c
}

// Files is the number of regular files whose content is known.
func (c *Contents) Files() int { return len(c.hashes) }

// ErrRestoreMismatch is wrapped by the error Check returns when the restored
// data is not the archive's.
var ErrRestoreMismatch = errors.New("the restored data differs from the archive")

// Check reads a tar of restored data in the shape of the engine's copy of
// /data ("data/", "data/home/…") and checks that every regular file of the
// archive is in it with the archive's content. Files the archive does not
// hold (hb's markers) are allowed.
func (c *Contents) Check(r io.Reader) error {
	tr := tar.NewReader(r)
	got := make(map[string][sha256.Size]byte, len(c.hashes))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("reading the restored data: %w", err)
		}
		name := path.Clean(h.Name)
		switch h.Typeflag {
		case tar.TypeReg:
			if _, want := c.hashes[name]; !want && !c.linkTarget(name) {
				continue
			}
			hs := sha256.New()
			if _, err := copyAll(hs, tr); err != nil {
				return fmt.Errorf("reading the restored data: in %s: %w", name, err)
			}
			var sum [sha256.Size]byte
			hs.Sum(sum[:0])
			got[name] = sum
		case tar.TypeLink:
			if sum, ok := got[path.Clean(h.Linkname)]; ok {
				got[name] = sum
			}
		}
	}
	var missing, differ []string
	for name, want := range c.hashes {
		switch sum, ok := got[name]; {
		case !ok:
			missing = append(missing, name)
		case sum != want:
			differ = append(differ, name)
		}
	}
	if len(missing) == 0 && len(differ) == 0 {
		return nil
	}
	var parts []string
	if len(missing) > 0 {
		parts = append(parts, fmt.Sprintf("%d file(s) missing (%s)", len(missing), firstNames(missing)))
	}
	if len(differ) > 0 {
		parts = append(parts, fmt.Sprintf("%d file(s) with other content (%s)", len(differ), firstNames(differ)))
	}
	return fmt.Errorf("%w: %s", ErrRestoreMismatch, strings.Join(parts, "; "))
}

// linkTarget reports whether name may be the file a restored hard link of
// an archive file points to: any regular file might, so hash them all but
// hb's own markers.
func (c *Contents) linkTarget(name string) bool {
	return !strings.HasPrefix(name, "data/.hb/")
}

func firstNames(names []string) string {
	sort.Strings(names)
	if len(names) > 3 {
		return strings.Join(names[:3], ", ") + ", …"
	}
	return strings.Join(names, ", ")
}
