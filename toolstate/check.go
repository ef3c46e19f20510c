package toolstate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/hermes-box/boxes/internal/text"
)

// DefaultMaxBytes bounds the bytes of the files of a tree Check takes
// unless told otherwise.
const DefaultMaxBytes int64 = 1 << 30

// Entry is one directory, regular file or link of a checked tree.
type Entry struct {
	// Path is where it is in the tree, slash-separated; "." is the tree's
	// directory itself.
	Path string
	// Mode holds its type and permission bits.
	Mode fs.FileMode
	// Size is a regular file's size in bytes.
	Size    int64
	ModTime time.Time
	// Link is a link's target, as it reads.
	Link string
	info fs.FileInfo
}

// Tree is a directory tree Check found fit to import.
type Tree struct {
	// Shown is the directory as messages name it: as it was given, or
	// ~/.hermes for the default.
	Shown string
	// Path is the directory's absolute path on this machine, links resolved.
	Path string
	// Entries are the directory itself, then everything in it, each
	// directory before what it holds, by name.
	Entries []Entry
	// Files, Dirs and Links count what the directory holds, at any depth
	// (Dirs leaves out the directory itself); Bytes is the files' size.
	Files, Dirs, Links int
	Bytes              int64
}

// Refusal is a tree Check refuses: the path that is wrong (the directory,
// or an entry in it, as messages show it) and what is wrong with it. It is
// found before anything is done to a box.
type Refusal struct {
	Path    string
	Problem string
	hint    string
}

func (e *Refusal) Error() string {
	return text.Printable(e.Path) + " " + e.Problem + "; nothing was changed"
}

// Hint is what to do about it.
func (e *Refusal) Hint() string { return e.hint }

// Hints of refusals.
const (
	hintDir     = "name the directory that holds the tool's state as DIR"
	hintKind    = "remove it, or copy the state without it to another directory and import that one"
	hintLink    = "replace the link with a copy of what it points to, or remove it"
	hintDangles = "remove the link"
	hintSize    = "--max-size raises the bound (--max-size 4GiB)"
)

// Check walks directory dir, shown in messages as shown, and returns its
// tree if it can be imported: it exists and is a directory (dir itself may
// be a link to one), it holds something, only directories, regular files
// that can be read and relative links to something inside it, and its files
// hold at most maxBytes. Anything else is a *Refusal naming the path.
// Nothing is read but the directories and the links; each file is opened
// once, to tell that it can be read.
func Check(dir, shown string, maxBytes int64) (*Tree, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, &Refusal{Path: shown, Problem: "cannot be found: " + err.Error(), hint: hintDir}
	}
	info, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, &Refusal{Path: shown, Problem: "does not exist", hint: hintDir}
	case err != nil:
		return nil, &Refusal{Path: shown, Problem: "cannot be read: " + reason(err), hint: hintDir}
	case !info.IsDir():
		return nil, &Refusal{Path: shown, Problem: "is not a directory but " + kind(info.Mode()), hint: hintDir}
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, &Refusal{Path: shown, Problem: "cannot be read: " + reason(err), hint: hintDir}
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, &Refusal{Path: shown, Problem: "cannot be read: " + reason(err), hint: hintDir}
	}
	defer root.Close()
	top, err := root.Lstat(".")
	if err != nil {
		return nil, &Refusal{Path: shown, Problem: "cannot be read: " + reason(err), hint: hintDir}
	}
	c := &checker{root: root, max: maxBytes, t: &Tree{Shown: shown, Path: real}}
	c.t.Entries = append(c.t.Entries, Entry{Path: ".", Mode: top.Mode(), ModTime: top.ModTime(), info: top})
	if err := c.walk("."); err != nil {
		return nil, err
	}
	if len(c.t.Entries) == 1 {
		return nil, &Refusal{Path: shown, Problem: "is empty: there is nothing to import", hint: hintDir}
	}
	return c.t, nil
}

type checker struct {
	root *os.Root
	max  int64
	t    *Tree
}

// at is entry p of the tree as messages show it.
func (c *checker) at(p string) string { return at(c.t.Shown, p) }

func at(shown, p string) string {
	if p == "." {
		return shown
	}
	return strings.TrimSuffix(shown, "/") + "/" + p
}

func (c *checker) unreadable(p string, err error) error {
	return &Refusal{Path: c.at(p), Problem: "cannot be read: " + reason(err), hint: "make it readable to you, or remove it"}
}

// walk checks what directory rel holds, and what they hold, in name order.
func (c *checker) walk(rel string) error {
	f, err := openNoFollow(c.root, rel)
	if err != nil {
		return c.unreadable(rel, err)
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return c.unreadable(rel, err)
	}
	sort.Strings(names)
	for _, name := range names {
		p := path.Join(rel, name)
		info, err := c.root.Lstat(p)
		if err != nil {
			return c.unreadable(p, err)
		}
		e := Entry{Path: p, Mode: info.Mode(), ModTime: info.ModTime(), info: info}
		switch mode := info.Mode(); {
		case mode.IsDir():
			c.t.Dirs++
			c.t.Entries = append(c.t.Entries, e)
			if err := c.walk(p); err != nil {
				return err
			}
			continue
		case mode.IsRegular():
			f, err := openNoFollow(c.root, p)
			if err != nil {
				return c.unreadable(p, err)
			}
			f.Close()
			e.Size = info.Size()
			c.t.Files++
			c.t.Bytes += e.Size
			if c.t.Bytes > c.max {
				return &Refusal{Path: c.t.Shown, Problem: fmt.Sprintf("holds more than %s of files, the bound (passed at %s)", text.Size(c.max), text.Printable(p)), hint: hintSize}
			}
		case mode&fs.ModeSymlink != 0:
			target, err := c.root.Readlink(p)
			if err != nil {
				return c.unreadable(p, err)
			}
			if err := c.link(p, target); err != nil {
				return err
			}
			e.Link = target
			c.t.Links++
		default:
			return &Refusal{Path: c.at(p), Problem: "is " + kind(mode) + ": only directories, regular files and links that stay inside " + text.Printable(c.t.Shown) + " are imported", hint: hintKind}
		}
		c.t.Entries = append(c.t.Entries, e)
	}
	return nil
}

// link refuses link p to target unless target is relative and leads to
// something inside the tree, through any other links on the way.
func (c *checker) link(p, target string) error {
	refuse := func(problem, hint string) error {
		return &Refusal{Path: c.at(p), Problem: "is a link to " + text.Printable(target) + ", " + problem, hint: hint}
	}
	if target == "" {
		return &Refusal{Path: c.at(p), Problem: "is a link to nothing", hint: hintDangles}
	}
	if filepath.IsAbs(target) || strings.HasPrefix(target, "/") {
		return refuse("an absolute path: only relative links to something inside "+text.Printable(c.t.Shown)+" are imported", hintLink)
	}
	if to := path.Join(path.Dir(p), filepath.ToSlash(target)); to == ".." || strings.HasPrefix(to, "../") {
		return refuse("outside "+text.Printable(c.t.Shown), hintLink)
	}
	// The root follows links only as long as they stay inside it.
	if _, err := c.root.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return refuse("which does not exist", hintDangles)
	} else if err != nil {
		return refuse("which leads out of "+text.Printable(c.t.Shown)+" through another link, or cannot be followed ("+reason(err)+")", hintLink)
	}
	return nil
}

// openNoFollow opens p in root for reading without blocking on a named
// pipe put there since it was looked at; a link is followed only inside
// root.
func openNoFollow(root *os.Root, p string) (*os.File, error) {
	return root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// kind names a file's type in messages.
func kind(mode fs.FileMode) string {
	switch {
	case mode.IsRegular():
		return "a regular file"
	case mode.IsDir():
		return "a directory"
	case mode&fs.ModeSymlink != 0:
		return "a link"
	case mode&fs.ModeNamedPipe != 0:
		return "a named pipe (fifo)"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	case mode&fs.ModeCharDevice != 0:
		return "a character device"
	case mode&fs.ModeDevice != 0:
		return "a block device"
	}
	return "a file of another kind (" + mode.Type().String() + ")"
}

// reason is err without the path a *fs.PathError repeats.
func reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
