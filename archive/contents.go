package archive

import (
	"archive/tar"
	"bufio"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Contents are the entries a restore streamed, by data name
// ("data/home/agent/.bashrc"): what the box is checked to hold once it
// runs (CheckListing). Their content was checked against the archive's
// content hashes as it streamed.
type Contents struct {
	entries map[string]entry
}

// entry is one streamed entry as the box's file system shows it: a kind as
// find's %y prints it ('d', 'f', 'l'; a hard link is 'f'), the size of a
// regular file and the target of a symlink.
type entry struct {
	kind byte
	size int64
	link string
}

func newContents() *Contents { return &Contents{entries: map[string]entry{}} }

// add records the streamed entry h. A hard link's target is an earlier
// regular file (the checker's rule), whose size it shows.
func (c *Contents) add(h *tar.Header) {
	name := path.Clean(h.Name)
	switch h.Typeflag {
	case tar.TypeDir:
		c.entries[name] = entry{kind: 'd'}
	case tar.TypeReg:
		c.entries[name] = entry{kind: 'f', size: h.Size}
	case tar.TypeLink:
		c.entries[name] = entry{kind: 'f', size: c.entries[path.Clean(h.Linkname)].size}
	case tar.TypeSymlink:
		c.entries[name] = entry{kind: 'l', size: int64(len(h.Linkname)), link: h.Linkname}
	}
}

// Files is the number of regular files streamed, hard links included.
func (c *Contents) Files() int {
	n := 0
	for _, e := range c.entries {
		if e.kind == 'f' {
			n++
		}
	}
	return n
}

// ErrRestoreMismatch is wrapped by the error CheckListing returns when the
// restored data is not the archive's.
var ErrRestoreMismatch = errors.New("the restored data differs from the archive")

// ListCommand lists dir (the box's /data, which the data names' "data"
// stands for) in the shape CheckListing reads: GNU find's kind, size and
// path of every entry, and a symlink's target, each field ended by a NUL so
// that any name fits.
func ListCommand(dir string) []string {
	return []string{"find", dir, "-printf", `%y %s %p\0%l\0`}
}

// CheckListing reads the listing of the restored /data (ListCommand's
// output) and checks that every entry streamed is there, of its kind, a
// regular file of its size and a symlink with its target: what a copy cut
// short or an entry the engine dropped would fail. Entries the archive does
// not hold (hb's markers) are allowed. It cannot see a byte changed in a
// file of the right size: the content was checked as it streamed.
func (c *Contents) CheckListing(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	field := func() (string, error) {
		s, err := br.ReadString(0)
		if err != nil {
			if err == io.EOF && s != "" {
				err = io.ErrUnexpectedEOF
			}
			return "", err
		}
		return s[:len(s)-1], nil
	}
	seen := make(map[string]bool, len(c.entries))
	var other, resized, relinked []string
	for {
		head, err := field()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("reading the listing of the restored data: %w", err)
		}
		link, err := field()
		if err != nil {
			return fmt.Errorf("reading the listing of the restored data: %w", noEOF(err))
		}
		kind, rest, ok1 := strings.Cut(head, " ")
		size, name, ok2 := strings.Cut(rest, " ")
		n, err := strconv.ParseInt(size, 10, 64)
		if !ok1 || !ok2 || len(kind) != 1 || err != nil {
			return fmt.Errorf("reading the listing of the restored data: bad line %.80q", head)
		}
		name = path.Clean(strings.TrimPrefix(name, "/"))
		want, ok := c.entries[name]
		if !ok {
			continue
		}
		seen[name] = true
		switch {
		case kind[0] != want.kind:
			other = append(other, name)
		case want.kind == 'f' && n != want.size:
			resized = append(resized, name)
		case want.kind == 'l' && link != want.link:
			relinked = append(relinked, name)
		}
	}
	var missing []string
	if len(seen) < len(c.entries) {
		for name := range c.entries {
			if !seen[name] {
				missing = append(missing, name)
			}
		}
	}
	var parts []string
	for _, p := range []struct {
		names []string
		what  string
	}{
		{missing, "missing"},
		{other, "of another kind"},
		{resized, "of another size"},
		{relinked, "pointing elsewhere"},
	} {
		if len(p.names) > 0 {
			parts = append(parts, fmt.Sprintf("%d %s (%s)", len(p.names), p.what, firstNames(p.names)))
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return fmt.Errorf("%w: of the %d entries streamed, %s", ErrRestoreMismatch, len(c.entries), strings.Join(parts, "; "))
}

func firstNames(names []string) string {
	sort.Strings(names)
	if len(names) > 3 {
		return strings.Join(names[:3], ", ") + ", …"
	}
	return strings.Join(names, ", ")
}
