//lint:file-ignore ST1005 errors here repeat the Docker daemon's own words, capitals and all, as boxes meets them

package fakeengine

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-box/boxes/engine"
)

// What a fake engine does inside a box: it keeps what is streamed into a
// volume (CopyTo) as the volume's Files, streams them back out (CopyFrom),
// and runs these commands (Exec) in a running container:
//
//	true, false      exit 0 and 1
//	sh -c "exit N"   exits N
//	cat PATH...      writes the files at PATH, in the volumes the container
//	                 mounts, to stdout; names each one missing (or a
//	                 directory) on stderr as GNU cat does, and then exits 1
//	cat              copies its input to its output until the input ends
//
// Any other command, and a path outside the container's volumes, fails
// with ErrNotSupported: the fake keeps no image's files.

// File is one file, directory or symbolic link in a volume.
type File struct {
	// Path is where it is in the volume: slash-separated, without a
	// leading slash.
	Path string `json:"path"`
	Dir  bool   `json:"dir,omitempty"`
	// Link is a symbolic link's target.
	Link string `json:"link,omitempty"`
	// Mode holds its permission bits.
	Mode     int64     `json:"mode"`
	UID      int       `json:"uid"`
	GID      int       `json:"gid"`
	Modified time.Time `json:"modified"`
	Data     []byte    `json:"data,omitempty"`
}

// file is the volume's file at rel.
func (v *Volume) file(rel string) *File {
	i := sort.Search(len(v.Files), func(i int) bool { return v.Files[i].Path >= rel })
	if i < len(v.Files) && v.Files[i].Path == rel {
		return &v.Files[i]
	}
	return nil
}

// put adds f, or replaces the file at its path; a directory put over a
// directory keeps what it holds. The files stay in path order, so that a
// directory comes before what it holds.
func (v *Volume) put(f File) {
	i := sort.Search(len(v.Files), func(i int) bool { return v.Files[i].Path >= f.Path })
	if i < len(v.Files) && v.Files[i].Path == f.Path {
		v.Files[i] = f
		return
	}
	v.Files = append(v.Files, File{})
	copy(v.Files[i+1:], v.Files[i:])
	v.Files[i] = f
}

// under are the files below directory rel ("" is the volume's root).
func (v *Volume) under(rel string) []File {
	var out []File
	for _, f := range v.Files {
		if rel == "" || strings.HasPrefix(f.Path, rel+"/") {
			out = append(out, f)
		}
	}
	return out
}

// mounted is the volume container c mounts at p or above it, and p's path
// inside it ("" for the volume's root).
func mounted(h *Host, c *Container, p string) (*Volume, string, bool) {
	p = path.Clean("/" + p)
	best := -1
	for i, m := range c.Mounts {
		if (p == m.Destination || strings.HasPrefix(p, m.Destination+"/")) && (best < 0 || len(m.Destination) > len(c.Mounts[best].Destination)) {
			best = i
		}
	}
	if best < 0 {
		return nil, "", false
	}
	_, v := h.volume(c.Mounts[best].Volume)
	rel := strings.TrimPrefix(strings.TrimPrefix(p, c.Mounts[best].Destination), "/")
	return v, rel, v != nil
}

// notFound is Docker's answer for a path a container does not have.
func notFound(p, id string) error {
	return fmt.Errorf("Error response from daemon: Could not find the file %s in container %s", p, id)
}

// CopyTo unpacks the tar stream content at dir, a directory of one of
// container id's volumes, keeping the owners and modes the tar names; the
// container may be stopped.
func (e *Engine) CopyTo(_ context.Context, id, dir string, content io.Reader) error {
	files, err := untar(content)
	if err != nil {
		return fmt.Errorf("copying into the container at %s: %w", dir, err)
	}
	return e.edit("CopyTo", func(h *Host) error {
		_, c := h.container(id)
		if c == nil {
			return fmt.Errorf("copying into the container at %s: Error response from daemon: No such container: %s", dir, id)
		}
		v, rel, ok := mounted(h, c, dir)
		if !ok {
			return fmt.Errorf("copying into %s of %s, outside its volumes: %w", dir, id, ErrNotSupported)
		}
		if f := v.file(rel); rel != "" && (f == nil || !f.Dir) {
			return fmt.Errorf("copying into the container at %s: %w", dir, notFound(dir, id))
		}
		for _, f := range files {
			f.Path = path.Join(rel, f.Path)
			for parent := path.Dir(f.Path); parent != "." && v.file(parent) == nil; parent = path.Dir(parent) {
				v.put(File{Path: parent, Dir: true, Mode: 0o755, Modified: Created})
			}
			if old := v.file(f.Path); old != nil && old.Dir && !f.Dir {
				return fmt.Errorf("copying into the container at %s: cannot overwrite directory %s with a file", dir, path.Join(dir, f.Path))
			}
			v.put(f)
		}
		return nil
	})
}

// untar reads a tar stream's directories, files and symbolic links, with
// their paths made relative; a hard link is kept as a copy of its target.
func untar(r io.Reader) ([]File, error) {
	var files []File
	seen := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		name := path.Clean(strings.TrimLeft(h.Name, "/"))
		if name == "." {
			continue
		}
		if name == ".." || strings.HasPrefix(name, "../") {
			return nil, fmt.Errorf("tar entry %q leaves the directory it is unpacked in", h.Name)
		}
		f := File{Path: name, Mode: h.Mode & 0o7777, UID: h.Uid, GID: h.Gid, Modified: h.ModTime.UTC()}
		switch h.Typeflag {
		case tar.TypeDir:
			f.Dir = true
		case tar.TypeReg:
			if f.Data, err = io.ReadAll(tr); err != nil {
				return nil, err
			}
		case tar.TypeSymlink:
			f.Link = h.Linkname
		case tar.TypeLink:
			data, ok := seen[path.Clean(strings.TrimLeft(h.Linkname, "/"))]
			if !ok {
				return nil, fmt.Errorf("tar entry %q links to %q, not before it in the stream", h.Name, h.Linkname)
			}
			f.Data = data
		default:
			return nil, fmt.Errorf("tar entry %q of type %q: %w", h.Name, h.Typeflag, ErrNotSupported)
		}
		seen[name] = f.Data
		files = append(files, f)
	}
}

// CopyFrom streams path of container id out as a tar, as Docker does:
// entries named after path's last element ("data", "data/…" for /data).
// The container may be stopped.
func (e *Engine) CopyFrom(_ context.Context, id, p string) (io.ReadCloser, error) {
	var buf bytes.Buffer
	err := e.read("CopyFrom", func(h *Host) error {
		_, c := h.container(id)
		if c == nil {
			return fmt.Errorf("copying %s out of the container: Error response from daemon: No such container: %s", p, id)
		}
		v, rel, ok := mounted(h, c, p)
		if !ok {
			return fmt.Errorf("copying %s out of %s, outside its volumes: %w", p, id, ErrNotSupported)
		}
		top := File{Dir: true, Mode: 0o755, Modified: Created}
		if rel != "" {
			f := v.file(rel)
			if f == nil {
				return fmt.Errorf("copying %s out of the container: %w", p, notFound(p, id))
			}
			top = *f
		}
		base := path.Base(path.Clean("/" + p))
		tw := tar.NewWriter(&buf)
		if err := writeFile(tw, base, top); err != nil {
			return err
		}
		if top.Dir {
			for _, f := range v.under(rel) {
				if err := writeFile(tw, path.Join(base, strings.TrimPrefix(f.Path, rel)), f); err != nil {
					return err
				}
			}
		}
		return tw.Close()
	})
	if err != nil {
		return nil, err
	}
	return io.NopCloser(&buf), nil
}

func writeFile(tw *tar.Writer, name string, f File) error {
	h := &tar.Header{Name: name, Mode: f.Mode, Uid: f.UID, Gid: f.GID, ModTime: f.Modified, Typeflag: tar.TypeReg, Size: int64(len(f.Data))}
	switch {
	case f.Dir:
		h.Typeflag, h.Name, h.Size = tar.TypeDir, name+"/", 0
	case f.Link != "":
		h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, f.Link, 0
	}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	_, err := tw.Write(f.Data)
	return err
}

// Exec runs one of the commands the fake knows (see above) in running
// container id and returns its exit code.
func (e *Engine) Exec(ctx context.Context, id string, o engine.ExecOptions) (int, error) {
	what := strings.Join(o.Cmd, " ")
	unsupported := fmt.Errorf("running %s in %s: %w", what, id, ErrNotSupported)
	var (
		stdout, stderr bytes.Buffer
		code           int
		gone           <-chan struct{}
	)
	err := e.read("Exec", func(h *Host) error {
		_, c := h.container(id)
		switch {
		case c == nil:
			return fmt.Errorf("exec in %.12s: Error response from daemon: No such container: %s", id, id)
		case c.State != "running":
			return fmt.Errorf("exec in %.12s: Error response from daemon: Container %s is not running", id, c.ID)
		case len(o.Cmd) == 0:
			return fmt.Errorf("exec in %.12s: Error response from daemon: No exec command specified", id)
		}
		switch {
		case what == "true":
		case what == "false":
			code = 1
		case len(o.Cmd) == 3 && o.Cmd[0] == "sh" && o.Cmd[1] == "-c" && strings.HasPrefix(o.Cmd[2], "exit "):
			n, err := strconv.Atoi(strings.TrimPrefix(o.Cmd[2], "exit "))
			if err != nil || n < 0 || n > 255 {
				return unsupported
			}
			code = n
		case what == "cat":
			gone = e.c.goneSignal(e.host)
		case o.Cmd[0] == "cat":
			for _, p := range o.Cmd[1:] {
				v, rel, ok := mounted(h, c, p)
				if !ok {
					return unsupported
				}
				switch f := v.file(rel); {
				case rel == "" || (f != nil && f.Dir):
					fmt.Fprintf(&stderr, "cat: %s: Is a directory\n", p)
					code = 1
				case f == nil:
					fmt.Fprintf(&stderr, "cat: %s: No such file or directory\n", p)
					code = 1
				case f.Link != "":
					return unsupported
				default:
					stdout.Write(f.Data)
				}
			}
		default:
			return unsupported
		}
		return nil
	})
	if err != nil {
		return -1, err
	}
	if _, err := io.Copy(orDiscard(o.Stdout), &stdout); err != nil {
		return -1, err
	}
	if _, err := io.Copy(orDiscard(o.Stderr), &stderr); err != nil {
		return -1, err
	}
	if gone != nil && o.Stdin != nil {
		return e.echo(ctx, id, o.Stdin, orDiscard(o.Stdout), gone)
	}
	return code, nil
}

// echo is cat of its input: it copies in to out until in ends, ctx ends or
// the engine goes away.
func (e *Engine) echo(ctx context.Context, id string, in io.Reader, out io.Writer, gone <-chan struct{}) (int, error) {
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(out, in)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return -1, err
		}
		return 0, nil
	case <-ctx.Done():
		return -1, fmt.Errorf("exec in %.12s: %w", id, context.Cause(ctx))
	case <-gone:
		return -1, e.unreachable()
	}
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
