package docker

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"time"
)

// A BuildContext is the set of files sent to the image builder, held in
// memory: the recipe is a few dozen kilobytes.
type BuildContext struct {
	files []contextFile // sorted by name
}

type contextFile struct {
	name string // slash-separated, relative
	data []byte
}

// NewBuildContext reads every regular file of fsys, except Go test files and
// testdata directories, which belong to the source tree and not to the image.
func NewBuildContext(fsys fs.FS) (*BuildContext, error) {
	c := &BuildContext{}
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "testdata" {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, "_test.go") {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("build context: %s is not a regular file", name)
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		c.files = append(c.files, contextFile{name: name, data: data})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(c.files, func(i, j int) bool { return c.files[i].name < c.files[j].name })
	return c, nil
}

// Add puts a file into the context, or replaces the file of that name.
func (c *BuildContext) Add(name string, data []byte) {
	i := sort.Search(len(c.files), func(i int) bool { return c.files[i].name >= name })
	if i < len(c.files) && c.files[i].name == name {
		c.files[i].data = data
		return
	}
	c.files = slices.Insert(c.files, i, contextFile{name: name, data: data})
}

// Names lists the context's files.
func (c *BuildContext) Names() []string {
	names := make([]string, len(c.files))
	for i, f := range c.files {
		names[i] = f.name
	}
	return names
}

// Digest is "sha256:…" over every file's name and content: two contexts with
// the same digest build the same image from the same arguments.
func (c *BuildContext) Digest() string {
	h := sha256.New()
	for _, f := range c.files {
		// Length-prefixed, so that no two file sets hash alike.
		fmt.Fprintf(h, "%d:%s %d:", len(f.name), f.name, len(f.data))
		h.Write(f.data)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// contextTime is the fixed modification time of every entry: the tar, and so
// the builder's view of it, depends on content only.
var contextTime = time.Unix(0, 0).UTC()

// Tar writes the context as the builder wants it: directories 0755, scripts
// (files starting with #!) and programs (ELF) 0755, other files 0644, owned by root, with fixed
// times. Embedded files have no modes of their own; deriving them from the
// content makes a build from the binary and one from the tree hit the same
// layer cache.
func (c *BuildContext) Tar() ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	seen := map[string]bool{}
	for _, f := range c.files {
		if err := writeDirs(tw, path.Dir(f.name), seen); err != nil {
			return nil, err
		}
		mode := int64(0o644)
		if bytes.HasPrefix(f.data, []byte("#!")) || bytes.HasPrefix(f.data, []byte("\x7fELF")) {
			mode = 0o755
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: mode, Size: int64(len(f.data)), ModTime: contextTime, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeDirs writes the entries of dir and its parents that are not written yet.
func writeDirs(tw *tar.Writer, dir string, seen map[string]bool) error {
	if dir == "." || seen[dir] {
		return nil
	}
	if err := writeDirs(tw, path.Dir(dir), seen); err != nil {
		return err
	}
	seen[dir] = true
	return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755, ModTime: contextTime, Format: tar.FormatPAX})
}

// InputsDigest is the digest of everything a build depends on: the context
// and the build arguments. boxes.lock records it, and a build whose inputs
// digest matches the lock's, with the image still on the engine, is skipped.
func InputsDigest(c *BuildContext, args map[string]string) string {
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	fmt.Fprintf(h, "context %s\n", c.Digest())
	for _, k := range keys {
		fmt.Fprintf(h, "arg %d:%s %d:%s\n", len(k), k, len(args[k]), args[k])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
