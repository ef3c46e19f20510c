package archive

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"filippo.io/age"
)

// Extract decrypts r with identities and writes the archive's data entries
// under dir (dir/data/…), checking them as it goes by the same rules as Verify.
// It creates dir (0700) if it does not exist and refuses a dir that is not
// empty.
//
// It never follows a symlink while writing: every entry is created anew, in a
// directory it has just made, and files are opened with O_CREATE|O_EXCL, which
// fails on an existing name, symlink or not. It keeps symlinks as symlinks
// (their targets are not checked: they are not followed), file and directory
// permissions (without setuid, setgid and sticky bits) and mtimes (except a
// symlink's); it does not change owners.
//
// It writes into a hidden directory in dir and moves the data to dir/data
// only once it is whole: dir never holds part of an archive under the name
// of the whole, not even after a crash. On error it leaves dir as it found
// it: it removes what it wrote, and dir and its parents if it made them,
// else gives dir back its mtime.
func Extract(r io.Reader, dir string, identities ...age.Identity) (m Manifest, sum Summary, err error) {
	return ExtractWith(r, dir, ExtractOptions{Options: Options{Identities: identities}})
}

// ExtractOptions are the options of ExtractWith.
type ExtractOptions struct {
	Options
	// Reserve, when not zero, is the free space in bytes to leave on dir's
	// file system: before it starts, Extract refuses an archive whose
	// declared size does not fit above it, and it stops (removing what it
	// wrote) before a file would take the free space below it.
	Reserve int64
}

// ExtractWith is Extract with options.
func ExtractWith(r io.Reader, dir string, opts ExtractOptions) (Manifest, Summary, error) {
	return ExtractContext(context.Background(), r, dir, opts)
}

// ExtractContext is ExtractWith until ctx is done: then it stops at its next
// read of r or of an entry, leaves dir as it found it, and returns an error
// wrapping ctx.Err(). Should ctx be done while the archive's key is
// derived, it returns at once, and a read of r under way may end after it
// has returned.
func ExtractContext(ctx context.Context, r io.Reader, dir string, opts ExtractOptions) (m Manifest, sum Summary, err error) {
	return extract(ctx, func() (*reader, error) { return openContext(ctx, r, opts.Options) }, dir, opts)
}

// extract is ExtractContext of the archive open opens.
func extract(ctx context.Context, open func() (*reader, error), dir string, opts ExtractOptions) (m Manifest, sum Summary, err error) {
	t, err := newTarget(dir)
	if err != nil {
		return Manifest{}, Summary{}, err
	}
	defer func() {
		if err != nil {
			t.undo()
		}
		t.close()
	}()
	rd, err := open()
	if err != nil {
		return Manifest{}, Summary{}, err
	}
	x := &extractor{root: t.stage}
	if opts.Reserve > 0 {
		x.room = &room{dir: dir, reserve: opts.Reserve}
		// Before anything is written, the data must fit: by the bound
		// the caller knows (ExtractFile's check of the whole archive), else
		// the size the manifest declares.
		need := rd.manifest.Size
		if opts.MaxBytes > 0 && (need == 0 || opts.MaxBytes < need) {
			need = opts.MaxBytes
		}
		if err := x.room.need(need); err != nil {
			rd.close()
			return Manifest{}, Summary{}, err
		}
	}
	if sum, err = rd.walk(stoppable(ctx, x.entry)); err != nil {
		return Manifest{}, Summary{}, stopped(ctx, err)
	}
	// The last moment to stop: past it, the data is moved into place.
	if err := ctx.Err(); err != nil {
		return Manifest{}, Summary{}, fmt.Errorf("archive: %w", err)
	}
	top, err := x.finish()
	if err != nil {
		return Manifest{}, Summary{}, err
	}
	if err := t.commit(top); err != nil {
		return Manifest{}, Summary{}, err
	}
	return rd.manifest, sum, nil
}

// extractor writes checked entries under its root.
type extractor struct {
	root *os.Root
	room *room         // nil: no reserve to keep
	dirs []*tar.Header // made so far, to be given their modes and mtimes last
}

// entry writes one entry.
func (x *extractor) entry(h *tar.Header, body io.Reader) error {
	name := strings.TrimSuffix(h.Name, "/")
	switch h.Typeflag {
	case tar.TypeDir:
		// Owner-writable until finish, so its entries can be made in it.
		if err := x.root.Mkdir(name, 0o700); err != nil {
			return err
		}
		x.dirs = append(x.dirs, h)
		return nil
	case tar.TypeReg:
		return x.file(name, h, body)
	case tar.TypeSymlink:
		return x.root.Symlink(h.Linkname, name)
	case tar.TypeLink:
		return x.root.Link(h.Linkname, name)
	}
	return fmt.Errorf("unsupported entry type (%s)", typeName(h.Typeflag))
}

// file writes a regular file.
func (x *extractor) file(name string, h *tar.Header, body io.Reader) error {
	if x.room != nil {
		if err := x.room.need(h.Size); err != nil {
			return err
		}
	}
	f, err := x.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = copyAll(f, body)
	if err == nil {
		err = f.Chmod(perm(h))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return x.root.Chtimes(name, h.ModTime, h.ModTime)
}

// finish gives the directories under data/ their modes and mtimes, deepest
// first, so that making their entries does not change them after. It
// returns data/'s own header, for commit to apply once data/ is in place:
// a directory its owner may not write to cannot be moved to another one.
func (x *extractor) finish() (*tar.Header, error) {
	var top *tar.Header
	for i := len(x.dirs) - 1; i >= 0; i-- {
		h := x.dirs[i]
		name := strings.TrimSuffix(h.Name, "/")
		if name == dataRoot {
			top = h
			continue
		}
		if err := setDir(x.root, name, h); err != nil {
			return nil, err
		}
	}
	return top, nil
}

// setDir gives directory name under root h's mtime and mode.
func setDir(root *os.Root, name string, h *tar.Header) error {
	if err := root.Chtimes(name, h.ModTime, h.ModTime); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	if err := root.Chmod(name, perm(h)); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	return nil
}

// perm returns an entry's permission bits, without setuid, setgid or sticky.
func perm(h *tar.Header) fs.FileMode {
	return fs.FileMode(h.Mode).Perm()
}

// ExtractFile extracts the archive at path into dir (see ExtractWith), after
// reading it whole once with VerifyWith, so that a damaged archive or a bad
// entry is refused before anything is written.
//
// The check tells the data's size, also of an archive that declares none (a
// legacy one): the extraction is refused before it starts if that would not
// leave the reserve free, and bounded by it.
func ExtractFile(path, dir string, opts ExtractOptions) (Manifest, Summary, error) {
	return ExtractFileContext(context.Background(), path, dir, opts)
}

// ExtractFileContext is ExtractFile until ctx is done (see ExtractContext).
func ExtractFileContext(ctx context.Context, path, dir string, opts ExtractOptions) (Manifest, Summary, error) {
	m, checked, err := VerifyFileContext(ctx, path, opts.Options)
	if err != nil {
		return Manifest{}, Summary{}, err
	}
	if bound := checked.Bytes + MarkerSlack; opts.MaxBytes == 0 || bound < opts.MaxBytes {
		opts.MaxBytes = bound
	}
	var done func()
	defer func() {
		if done != nil {
			done()
		}
	}()
	_, sum, err := extract(ctx, func() (*reader, error) {
		rd, d, err := openFile(ctx, path, "extracting", opts.Options)
		done = d
		return rd, err
	}, dir, opts)
	if err != nil {
		return Manifest{}, Summary{}, err
	}
	return m, sum, nil
}

// ErrNoRoom is wrapped by the error returned when an extraction would take
// the free space of its target below the reserve.
var ErrNoRoom = errors.New("not enough free space")

// room keeps track of the free space left on dir's file system.
type room struct {
	dir     string
	reserve int64
	free    int64 // as last measured, less what was written since
	known   bool
}

// need checks that n more bytes can be written and keep the reserve free.
// It measures the file system again when its estimate falls short.
func (r *room) need(n int64) error {
	if r.known && r.free-n >= r.reserve {
		r.free -= n
		return nil
	}
	free, err := FreeSpace(r.dir)
	if err != nil {
		return fmt.Errorf("archive: measuring the free space of %s: %w", r.dir, err)
	}
	r.free, r.known = free, true
	if free-n < r.reserve {
		return fmt.Errorf("archive: %w in %s: %d bytes more would leave %d free, under the reserve of %d", ErrNoRoom, r.dir, n, free-n, r.reserve)
	}
	r.free -= n
	return nil
}

// MarkerSlack is added to a checked size to bound a second read of the same
// archive: a reader counts a legacy marker's size before it drops it.
const MarkerSlack = 1 << 20
