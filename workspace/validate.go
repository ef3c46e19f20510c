package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/hermes-box/boxes/internal/text"
	"github.com/hermes-box/boxes/spec"
)

// Validation is what an offline check of the two files found; validate
// --json prints it.
type Validation struct {
	File     string   `json:"file"`
	Boxes    []string `json:"boxes"`
	Hosts    []string `json:"hosts"`
	Lock     string   `json:"lock"` // "ok", "missing" or "no-image"
	Image    string   `json:"image,omitempty"`
	Warnings []string `json:"warnings"`
	// Hints are the next step of each warning, in the same order.
	Hints []string `json:"-"`
}

func (v *Validation) warn(text, hint string) {
	v.Warnings = append(v.Warnings, text)
	v.Hints = append(v.Hints, hint)
}

// Validate checks what Open could not refuse: a lock missing or without an
// image, an image built from other inputs than inputs (the digest a build of
// the lock's pins would have; false when they are not complete) says, and a
// boxes.schema.json that is not this boxes's schema.
func (w *Workspace) Validate(inputs func(*spec.Lock) (string, bool)) (Validation, error) {
	v := Validation{File: filepath.Base(w.Path), Boxes: []string{}, Hosts: []string{}, Warnings: []string{}}
	for _, b := range w.Config.Boxes {
		v.Boxes = append(v.Boxes, b.Name)
	}
	for name := range w.Config.Hosts {
		v.Hosts = append(v.Hosts, name)
	}
	sort.Strings(v.Hosts)
	switch lock := w.Lock; {
	case lock == nil:
		v.Lock = "missing"
		v.warn("boxes.lock not found; plan will need it", "boxes lock update, then boxes build (or boxes lock image REF for an image the engine has)")
	case lock.Image == nil:
		v.Lock = "no-image"
		v.warn("boxes.lock has pins but no image; plan will need one", "boxes build makes it (or boxes lock image REF pins one the engine has)")
	default:
		v.Lock, v.Image = "ok", lock.Image.ID
		if current, ok := inputs(lock); ok && lock.Image.Inputs != "" && lock.Image.Inputs != current {
			v.warn("boxes.lock: image.inputs is not the digest of this recipe and these pins: the image was built from other inputs", "boxes build makes the image of the current pins")
		}
	}
	got, err := os.ReadFile(filepath.Join(w.Dir(), SchemaFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return v, err
	case !bytes.Equal(got, spec.Schema()):
		v.warn(SchemaFile+" is not this boxes's schema of boxes.yaml", "boxes schema > "+SchemaFile)
	}
	return v, nil
}

// WriteText writes what validate found good: the file and its boxes, and
// the lock's image when it has one.
func (v Validation) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%s: %s OK\n", v.File, text.Plural(len(v.Boxes), "box", "boxes"))
	if v.Lock == "ok" {
		fmt.Fprintf(w, "boxes.lock: image %s OK\n", v.Image)
	}
}
