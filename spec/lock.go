package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"time"

	"gopkg.in/yaml.v3"
)

const lockHeader = "# boxes.lock: written by boxes build / boxes lock. Review changes in pull requests; do not edit by hand.\n"

var imageIDPattern = lazyRegexp(`^sha256:[0-9a-f]{64}$`)

// The on-disk shape of boxes.lock; field order is the file's key order.
type lockFile struct {
	Version int `yaml:"version"`
	// Pins maps each pin's name to its pinFields, in PinDefs order.
	Pins  yaml.Node  `yaml:"pins"`
	Image *lockImage `yaml:"image,omitempty"`
}

// pinFields are the fields of every kind of pin; PinKind.Fields says which
// a pin may have, and the order here is the file's key order.
type pinFields struct {
	Image     string `yaml:"image,omitempty"`
	Digest    string `yaml:"digest,omitempty"`
	Package   string `yaml:"package,omitempty"`
	Version   string `yaml:"version,omitempty"`
	Integrity string `yaml:"integrity,omitempty"`
}

type lockImage struct {
	ID     string    `yaml:"id"`
	Ref    string    `yaml:"ref,omitempty"`
	Inputs string    `yaml:"inputs,omitempty"`
	Built  string    `yaml:"built,omitempty"`
	Tools  yaml.Node `yaml:"tools,omitempty"`
}

// LoadLock reads boxes.lock; a missing file is an error satisfying errors.Is(err, fs.ErrNotExist).
func LoadLock(path string) (*Lock, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseLock(path, data)
}

// ParseLock validates boxes.lock content.
func ParseLock(path string, data []byte) (*Lock, error) {
	p := &parser{file: path}
	doc, ok := p.document(data)
	if !ok {
		return nil, p.errs
	}
	if len(doc.Content) == 0 {
		p.errorf(nil, "run boxes build or boxes lock image REF", "%s is empty", displayName(path))
		return nil, p.errs
	}
	root := doc.Content[0]
	// mapping() reports duplicate and unknown keys with their positions before decoding.
	// pin → its entry, and its fields' entries, for positions.
	pinNodes := map[string]pinNode{}
	// at is where a top-level or image field's value is written, for errors.
	at := map[string]*yaml.Node{"": root}
	if root.Kind == yaml.MappingNode {
		top := p.mapping(root, []string{"version", "pins", "image"})
		if v, ok := top["version"]; ok {
			at["version"] = v.value
		}
		if pins, ok := top["pins"]; ok {
			for name, e := range p.mapping(pins.value, PinNames) {
				d, _ := PinDefOf(name)
				pinNodes[name] = pinNode{e, p.mapping(e.value, d.Kind.Fields())}
			}
		}
		if img, ok := top["image"]; ok {
			for k, e := range p.mapping(img.value, []string{"id", "ref", "inputs", "built", "tools"}) {
				at["image."+k] = e.value
			}
		}
	}
	var lf lockFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(&lf)
	fields := map[string]pinFields{}
	if err == nil && lf.Pins.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(lf.Pins.Content) && err == nil; i += 2 {
			var f pinFields
			err = lf.Pins.Content[i+1].Decode(&f)
			fields[lf.Pins.Content[i].Value] = f
		}
	}
	if err != nil && len(p.errs) == 0 {
		p.syntaxError(data, err, false)
	}
	if len(p.errs) > 0 {
		return nil, p.errs.sorted()
	}
	if lf.Version != 1 {
		p.errorf(nodeOr(at["version"], root), "this boxes understands version: 1", "unsupported lock version %d", lf.Version)
		return nil, p.errs
	}
	l := &Lock{Path: path, Version: lf.Version}
	for name, f := range fields {
		if t := l.Pins.Tool(name); t != nil {
			*t = ToolPin{Package: f.Package, Version: f.Version, Integrity: f.Integrity}
		} else {
			l.Pins.Base = BasePin{Image: f.Image, Digest: f.Digest}
		}
	}
	p.checkPins(l.Pins, pinNodes)
	if lf.Image != nil {
		l.Image = p.lockedImage(lf.Image, at, root)
	}
	if len(p.errs) > 0 {
		return nil, p.errs.sorted()
	}
	return l, nil
}

// lockedImage checks and reads the lock's image: entry, reporting at the
// positions in at (root when a field has none).
func (p *parser) lockedImage(img *lockImage, at map[string]*yaml.Node, root *yaml.Node) *Image {
	li := &Image{ID: img.ID, Ref: img.Ref, Inputs: img.Inputs, Tools: map[string]string{}}
	if !imageIDPattern().MatchString(img.ID) {
		p.errorf(nodeOr(at["image.id"], root), "run boxes build or boxes lock image REF", "image.id %q is not sha256:<64 hex digits>", img.ID)
	}
	if img.Built != "" {
		t, err := time.Parse(time.RFC3339, img.Built)
		if err != nil {
			p.errorf(nodeOr(at["image.built"], root), "", "image.built %q is not an RFC 3339 time", img.Built)
		}
		li.Built = t.UTC()
	}
	if img.Tools.Kind == yaml.MappingNode {
		for name, e := range p.mapping(&img.Tools, nil) {
			if v, ok := p.str(e.value); ok {
				li.Tools[name] = v
			}
		}
	}
	return li
}

func nodeOr(n, fallback *yaml.Node) *yaml.Node {
	if n != nil {
		return n
	}
	return fallback
}

// Marshal renders the lock with a header and a stable key order, so that
// rewriting an unchanged lock changes no byte.
func (l *Lock) Marshal() ([]byte, error) {
	lf := lockFile{Version: 1, Pins: yaml.Node{Kind: yaml.MappingNode}}
	for _, d := range PinDefs {
		var f pinFields
		if t := l.Pins.Tool(d.Name); t != nil {
			if t.Version == "" {
				continue
			}
			f = pinFields{Package: t.Package, Version: t.Version, Integrity: t.Integrity}
		} else {
			if l.Pins.Base.Image == "" {
				continue
			}
			f = pinFields{Image: l.Pins.Base.Image, Digest: l.Pins.Base.Digest}
		}
		var v yaml.Node
		if err := v.Encode(f); err != nil {
			return nil, fmt.Errorf("writing boxes.lock: %w", err)
		}
		lf.Pins.Content = append(lf.Pins.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: d.Name}, &v)
	}
	if img := l.Image; img != nil {
		li := &lockImage{ID: img.ID, Ref: img.Ref, Inputs: img.Inputs}
		if !img.Built.IsZero() {
			li.Built = img.Built.UTC().Format(time.RFC3339)
		}
		if len(img.Tools) > 0 {
			names := make([]string, 0, len(img.Tools))
			for n := range img.Tools {
				names = append(names, n)
			}
			sort.Strings(names)
			li.Tools = yaml.Node{Kind: yaml.MappingNode}
			for _, n := range names {
				li.Tools.Content = append(li.Tools.Content,
					&yaml.Node{Kind: yaml.ScalarNode, Value: n},
					&yaml.Node{Kind: yaml.ScalarNode, Value: img.Tools[n], Style: yaml.DoubleQuotedStyle})
			}
		}
		lf.Image = li
	}
	var buf bytes.Buffer
	buf.WriteString(lockHeader)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(lf); err != nil {
		return nil, fmt.Errorf("writing boxes.lock: %w", err)
	}
	return buf.Bytes(), enc.Close()
}

// WriteLock writes the lock atomically: a temporary file beside it, then a rename.
func WriteLock(path string, l *Lock) error {
	data, err := l.Marshal()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".boxes.lock.*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// The forms of pin values, as provision.sh accepts them.
var (
	versionPattern   = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)
	gitRefPattern    = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z._/-]*$`)
	sha256Pattern    = imageIDPattern // the same form
	sriPattern       = lazyRegexp(`^sha512-[A-Za-z0-9+/]{86}==$`)
	npmPackagPattern = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._-]*/)?[a-z0-9][a-z0-9._-]*$`)
)

const updateHint = "remove the pin, then boxes lock update NAME writes it in the right form"

// checkPins reports every pin value not in the form the build needs, at its
// position in the file.
func (p *parser) checkPins(pins Pins, nodes map[string]pinNode) {
	at := func(pin, field string) *yaml.Node {
		n, ok := nodes[pin]
		if !ok {
			return nil
		}
		if f, ok := n.fields[field]; ok {
			return f.value
		}
		return n.key
	}
	if _, ok := nodes["base"]; ok {
		b := pins.Base
		if b.Image == "" {
			p.errorf(at("base", "image"), updateHint, "pins.base.image is empty")
		}
		if b.Digest != "" && !sha256Pattern().MatchString(b.Digest) {
			p.errorf(at("base", "digest"), updateHint, "pins.base.digest %q is not sha256:<64 hex digits>", b.Digest)
		}
	}
	for _, d := range PinDefs {
		name := d.Name
		if _, ok := nodes[name]; !ok || d.Kind == BaseImage {
			continue
		}
		t := *pins.Tool(name)
		field := func(f string) string { return "pins." + name + "." + f }
		switch {
		case t.Version == "":
			p.errorf(at(name, "version"), updateHint, "%s is empty", field("version"))
		case d.Kind == GitRef && !gitRefPattern.MatchString(t.Version):
			p.errorf(at(name, "version"), updateHint, "%s %q is not a git commit, tag or branch", field("version"), t.Version)
		case d.Kind != GitRef && !versionPattern.MatchString(t.Version):
			p.errorf(at(name, "version"), updateHint, "%s %q is not an exact version like 1.2.3", field("version"), t.Version)
		}
		switch d.Kind {
		case Download:
			if t.Integrity != "" && !sha256Pattern().MatchString(t.Integrity) {
				p.errorf(at(name, "integrity"), updateHint, "%s %q is not sha256:<64 hex digits>", field("integrity"), t.Integrity)
			}
		case NPMPackage:
			if t.Integrity != "" && !sriPattern().MatchString(t.Integrity) {
				p.errorf(at(name, "integrity"), updateHint, "%s %q is not npm's sha512-<base64> integrity", field("integrity"), t.Integrity)
			}
			if t.Package != "" && !npmPackagPattern.MatchString(t.Package) {
				p.errorf(at(name, "package"), "", "%s %q is not an npm package name", field("package"), t.Package)
			}
		case GitRef:
			if t.Integrity != "" {
				p.errorf(at(name, "integrity"), "the commit pins "+name+" exactly", "%s is not used: %s is pinned by its git commit", field("integrity"), name)
			}
		}
	}
}

// pinNode is one pin's entry in pins: and its fields' entries.
type pinNode struct {
	entry
	fields map[string]entry
}

// ReadLock reads the boxes.lock at path, naming it display in errors; a
// missing lock is (nil, nil).
func ReadLock(path, display string) (*Lock, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	l, err := ParseLock(display, data)
	if err != nil {
		return nil, err
	}
	l.Path = path
	return l, nil
}
