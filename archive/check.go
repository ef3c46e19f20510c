package archive

import (
	"archive/tar"
	"errors"
	"fmt"
	"path"
	"strings"
)

// dataRoot is the name of the top directory of an archive's data.
const dataRoot = "data"

// layout lists the directories every box's data holds.
var layout = []string{dataRoot, "data/home", "data/home/agent"}

// checker applies the archive rules to a stream of data entries, one entry at
// a time, and counts what it accepts. Its zero value is ready to use.
type checker struct {
	seen map[string]byte // cleaned name → type flag of every entry so far
	sum  Summary

	// limit, when not zero, bounds sum.Bytes; limitWhy says where it comes from.
	limit    int64
	limitWhy string
	// dropXattrs makes check leave out extended attributes instead of
	// refusing them: what a writer does with the engine's tar.
	dropXattrs bool
	xattrs     int // extended attributes dropped
}

// Limits of the Linux file systems a box's volume lives on, which the
// engine's restore hits as ENAMETOOLONG.
const (
	maxNameBytes = 255  // one path component
	maxPathBytes = 4095 // a whole path, "/data/…", or a symlink's target
)

// setLimit bounds the data's total size to n bytes (if n > 0 and it is below
// the bound already set).
func (c *checker) setLimit(n int64, why string) {
	if n > 0 && (c.limit == 0 || n < c.limit) {
		c.limit, c.limitWhy = n, why
	}
}

// entryError is an error about one entry, named as the archive names it.
func entryError(name string, format string, args ...any) error {
	return fmt.Errorf("archive: entry %q: "+format, append([]any{name}, args...)...)
}

// shortName shortens a name too long to be shown whole in a message.
func shortName(name string) string {
	if len(name) <= 120 {
		return name
	}
	return name[:60] + "…" + name[len(name)-40:]
}

// checkLengths checks a cleaned name against the file systems' limits, so
// that no archive passes the checks and then fails half-way through a restore.
func checkLengths(name string) error {
	if len(name)+1 > maxPathBytes {
		return fmt.Errorf("path of %d bytes: longer than the %d a file system takes", len(name)+1, maxPathBytes)
	}
	for _, elem := range strings.Split(name, "/") {
		if len(elem) > maxNameBytes {
			return fmt.Errorf("a name of %d bytes: longer than the %d a file system takes", len(elem), maxNameBytes)
		}
	}
	return nil
}

// checkXattrs refuses extended attributes, which the engine's restore into
// a volume refuses too (security.capability, for one), or, when writing,
// drops them.
func (c *checker) checkXattrs(h *tar.Header) error {
	for k := range h.PAXRecords {
		if attr, ok := strings.CutPrefix(k, "SCHILY.xattr."); ok {
			if !c.dropXattrs {
				return fmt.Errorf("extended attribute %s: a box's data carries none (the engine's restore refuses them)", attr)
			}
			c.xattrs++
		}
	}
	return nil
}

// check checks the next entry h against the rules and what came before it,
// and returns the header to write for it: the cleaned name (directories end
// in "/"), and only the fields a box's data needs.
func (c *checker) check(h *tar.Header) (*tar.Header, error) {
	name, err := dataName(h.Name)
	if err != nil {
		return nil, entryError(h.Name, "%v", err)
	}
	if _, dup := c.seen[name]; dup {
		return nil, entryError(h.Name, "duplicate of an earlier entry")
	}
	if err := checkLengths(name); err != nil {
		return nil, entryError(shortName(h.Name), "%v", err)
	}
	if err := c.checkParent(name); err != nil {
		return nil, entryError(h.Name, "%v", err)
	}
	if err := c.checkXattrs(h); err != nil {
		return nil, entryError(h.Name, "%v", err)
	}
	link, err := c.checkType(h, name)
	if err != nil {
		return nil, entryError(h.Name, "%w", err)
	}
	if c.seen == nil {
		c.seen = make(map[string]byte)
	}
	c.seen[name] = h.Typeflag
	return canonical(h, name, link), nil
}

// dataName returns the cleaned form of an entry or link name, which must be
// relative, free of "..", and "data" or under "data/".
func dataName(name string) (string, error) {
	switch {
	case name == "":
		return "", errors.New("empty name")
	case strings.HasPrefix(name, "/"):
		return "", errors.New("absolute name")
	case strings.Contains(name, "\x00"):
		return "", errors.New("NUL in name")
	}
	for _, elem := range strings.Split(name, "/") {
		if elem == ".." {
			return "", errors.New(`name contains ".."`)
		}
	}
	clean := path.Clean(name)
	if clean != dataRoot && !strings.HasPrefix(clean, dataRoot+"/") {
		return "", errors.New("outside data/")
	}
	return clean, nil
}

// checkParent checks that the directory holding name is an earlier directory
// entry: so no entry goes through a symlink or a file, and an extractor only
// ever writes into directories it made itself.
func (c *checker) checkParent(name string) error {
	if name == dataRoot {
		return nil
	}
	parent := path.Dir(name)
	switch typ, ok := c.seen[parent]; {
	case !ok:
		return fmt.Errorf("its directory %s/ is not earlier in the archive", parent)
	case typ == tar.TypeSymlink:
		return fmt.Errorf("goes through symlink %s", parent)
	case typ != tar.TypeDir:
		return fmt.Errorf("goes through %s, which is not a directory", parent)
	}
	return nil
}

// checkType checks h's type and, for links, its target, counts the entry,
// and returns the link target to write (cleaned, for a hard link).
func (c *checker) checkType(h *tar.Header, name string) (string, error) {
	if name == dataRoot && h.Typeflag != tar.TypeDir {
		return "", errors.New("data is not a directory")
	}
	if h.Typeflag != tar.TypeDir && strings.HasSuffix(h.Name, "/") {
		return "", errors.New("name ends in / but the entry is not a directory")
	}
	switch h.Typeflag {
	case tar.TypeDir:
		c.sum.Dirs++
		return "", nil
	case tar.TypeReg:
		if h.Size < 0 {
			return "", errors.New("negative size")
		}
		if c.limit > 0 && c.sum.Bytes+h.Size > c.limit {
			return "", fmt.Errorf("%w: a file of %d bytes takes the data past %d bytes, %s", ErrTooBig, h.Size, c.limit, c.limitWhy)
		}
		c.sum.Files++
		c.sum.Bytes += h.Size
		return "", nil
	case tar.TypeSymlink:
		if h.Linkname == "" {
			return "", errors.New("symlink with no target")
		}
		if len(h.Linkname) > maxPathBytes || strings.Contains(h.Linkname, "\x00") {
			return "", fmt.Errorf("symlink target of %d bytes: longer than the %d a file system takes", len(h.Linkname), maxPathBytes)
		}
		c.sum.Links++
		return h.Linkname, nil
	case tar.TypeLink:
		target, err := c.checkHardLink(h.Linkname)
		if err != nil {
			return "", err
		}
		c.sum.Links++
		return target, nil
	}
	return "", fmt.Errorf("unsupported entry type (%s)", typeName(h.Typeflag))
}

// checkHardLink checks that a hard link's target is an earlier regular file
// (or a hard link to one) under data/, and returns its cleaned name.
func (c *checker) checkHardLink(linkname string) (string, error) {
	target, err := dataName(linkname)
	if err != nil {
		return "", fmt.Errorf("hard link to %q: %v", linkname, err)
	}
	if typ := c.seen[target]; typ != tar.TypeReg && typ != tar.TypeLink {
		return "", fmt.Errorf("hard link to %q, which is not an earlier file in the archive", linkname)
	}
	return target, nil
}

// uncount takes an accepted entry that is left out back out of the summary.
func (c *checker) uncount(h *tar.Header) {
	switch h.Typeflag {
	case tar.TypeReg:
		c.sum.Files--
		c.sum.Bytes -= h.Size
	case tar.TypeSymlink, tar.TypeLink:
		c.sum.Links--
	}
}

// finish checks what can only be checked once every entry has been seen:
// that the data has a box's layout.
func (c *checker) finish() error {
	for _, dir := range layout {
		if c.seen[dir] != tar.TypeDir {
			return fmt.Errorf("archive: no %s/ directory: not a box's data", dir)
		}
	}
	return nil
}

// setID are the setuid and setgid bits, which no entry keeps: a box's data
// is the agent's, and a setuid root file in it would be a way up.
const setID = 0o6000

// canonical returns the header to write for an accepted entry: no extended
// attributes (refused or dropped by checkXattrs), no setuid or setgid bit.
func canonical(h *tar.Header, name, link string) *tar.Header {
	out := &tar.Header{
		Typeflag: h.Typeflag,
		Name:     name,
		Linkname: link,
		Mode:     h.Mode &^ setID,
		Uid:      h.Uid,
		Gid:      h.Gid,
		Uname:    h.Uname,
		Gname:    h.Gname,
		ModTime:  h.ModTime,
	}
	switch h.Typeflag {
	case tar.TypeDir:
		out.Name += "/"
	case tar.TypeReg:
		out.Size = h.Size
	}
	return out
}

// typeName names a tar type flag for an error message.
func typeName(t byte) string {
	switch t {
	case tar.TypeChar:
		return "character device"
	case tar.TypeBlock:
		return "block device"
	case tar.TypeFifo:
		return "fifo"
	case tar.TypeXGlobalHeader:
		return "global header"
	}
	return fmt.Sprintf("type %q", t)
}
