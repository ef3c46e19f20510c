package toolstate

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/hermes-box/boxes/internal/text"
)

// TarOptions say how WriteTar names and owns what it writes.
type TarOptions struct {
	// Name is the directory the tree is in the tar: its entries are Name/,
	// Name/…
	Name string
	// UID and GID own every entry.
	UID, GID int
	// Content, when set, wraps the reader of the files' bytes, in the
	// order they are written: a progress meter counts them.
	Content func(io.Reader) io.Reader
}

// ChangedError is a tree that changed on this machine between its check
// and its copy: an entry gone, of another kind, another file, or whose
// size or time changed while it was read.
type ChangedError struct {
	// Path is the entry as messages show it.
	Path, Change string
}

func (e *ChangedError) Error() string {
	return text.Printable(e.Path) + " changed while it was imported: " + e.Change
}

// Hint is what to do about it.
func (e *ChangedError) Hint() string {
	return "stop the tool on this machine, then import again"
}

// WriteTar writes t to w as a tar: Name/ first, then every entry under it,
// owned by UID and GID, with its permission bits (setuid, setgid and sticky
// bits are left out) and modification time; links as links. Each entry is
// looked at again before it is written, and a file is read only when it is
// the very file checked, unchanged: anything else is a *ChangedError, and
// nothing more is written.
func (t *Tree) WriteTar(w io.Writer, o TarOptions) error {
	root, err := os.OpenRoot(t.Path)
	if err != nil {
		return &ChangedError{Path: t.Shown, Change: "it cannot be opened again: " + reason(err)}
	}
	defer root.Close()
	src := &source{}
	content := io.Reader(src)
	if o.Content != nil {
		content = o.Content(src)
	}
	tw := tar.NewWriter(w)
	for _, e := range t.Entries {
		changed := func(format string, args ...any) error {
			return &ChangedError{Path: at(t.Shown, e.Path), Change: fmt.Sprintf(format, args...)}
		}
		now, err := root.Lstat(e.Path)
		switch {
		case err != nil:
			return changed("it cannot be read again: %s", reason(err))
		case now.Mode().Type() != e.Mode.Type():
			return changed("it was %s and is now %s", kind(e.Mode), kind(now.Mode()))
		}
		name := o.Name
		if e.Path != "." {
			name += "/" + e.Path
		}
		h := &tar.Header{Name: name, Mode: int64(e.Mode.Perm()), Uid: o.UID, Gid: o.GID, ModTime: e.ModTime}
		switch {
		case e.Mode.IsDir():
			h.Typeflag, h.Name = tar.TypeDir, name+"/"
			err = tw.WriteHeader(h)
		case e.Mode&fs.ModeSymlink != 0:
			target, rerr := root.Readlink(e.Path)
			if rerr != nil || target != e.Link {
				return changed("the link no longer points to %s", text.Printable(e.Link))
			}
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.Link
			err = tw.WriteHeader(h)
		default:
			h.Typeflag, h.Size = tar.TypeReg, e.Size
			err = writeFile(root, tw, h, e, src, content, changed)
		}
		if err != nil {
			return err
		}
	}
	return tw.Close()
}

// writeFile writes regular file e, header h, reading it through content,
// which src feeds.
func writeFile(root *os.Root, tw *tar.Writer, h *tar.Header, e Entry, src *source, content io.Reader, changed func(string, ...any) error) error {
	f, err := openNoFollow(root, e.Path)
	if err != nil {
		return changed("it cannot be read again: %s", reason(err))
	}
	defer f.Close()
	same := func() error {
		info, err := f.Stat()
		switch {
		case err != nil:
			return changed("it cannot be read again: %s", reason(err))
		case !os.SameFile(info, e.info):
			return changed("it is another file now")
		case info.Size() != e.Size:
			return changed("its size went from %d to %d bytes", e.Size, info.Size())
		case !info.ModTime().Equal(e.ModTime):
			return changed("it was written to")
		}
		return nil
	}
	if err := same(); err != nil {
		return err
	}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	src.r = f
	defer func() { src.r = nil }()
	n, err := io.Copy(tw, io.LimitReader(content, e.Size))
	if err != nil {
		return err
	}
	if n != e.Size {
		return changed("it ended after %d of its %d bytes", n, e.Size)
	}
	return same()
}

// source reads the file being written; a progress meter wraps it once for
// every file.
type source struct{ r io.Reader }

func (s *source) Read(p []byte) (int, error) {
	if s.r == nil {
		return 0, io.EOF
	}
	return s.r.Read(p)
}
