package compose

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/hermes-box/boxes/gate"
	"github.com/hermes-box/boxes/spec"
)

// A load of compose-go's takes milliseconds (it compiles compose's schema
// anew each time): a plan of thousands of boxes, each hashed twice, would
// take minutes, and an apply of as many changes as long. But boxes of one
// shape (the same settings, image and files: everything of Input but the
// box's name, token, kept port and door) make the same project but for a
// few strings, which the loader copies as they are: the box's name, its
// token, its port, and its gate's configuration, credentials' digests and
// closed addresses, the shape's slots.
//
// So the first box of a shape is loaded as ever, and the shape once more
// with placeholders in its slots (and all else of Input that is not in the
// shape's key made different: a door, a host, a line of its own): when
// that project, the box's values put in its slots, is the box's own (and
// its services' JSON hashes as the box's do), it is the shape's template,
// and the shape's other boxes are made from it with their own values,
// with no load. A shape whose
// placeholders do not come back as they went in (a value the loader would
// change, a placeholder's spelling met elsewhere) is loaded for each box,
// as is every box once shapes are many.

// ServiceHashesOf is ServiceHashes(Project(in)), what a plan compares each
// box's containers with: for a box of a known shape, its services' JSON
// with the box's values in the slots, hashed, and nothing else made.
func ServiceHashesOf(in Input) (map[string]string, error) {
	if err := check(in); err != nil {
		return nil, err
	}
	if s := known(in); s != nil && s.services != nil {
		return s.hashes(values(in)), nil
	}
	p, err := Project(in)
	if err != nil {
		return nil, err
	}
	return ServiceHashes(p)
}

// loaded is in's project as compose-go's loader makes it: from its shape's
// template when it has one; else loaded, and for a new shape its template
// made (once: boxes of a new shape applied at once wait for it).
func loaded(in Input) (*types.Project, error) {
	key, ok := shapeOf(in)
	if !ok {
		return loadModel(in, model(in), true)
	}
	shapes.mu.Lock()
	e, seen := shapes.m[key]
	if !seen && len(shapes.m) < maxShapes {
		e = &shapeEntry{made: make(chan struct{})}
		shapes.m[key] = e
	}
	shapes.mu.Unlock()
	if seen {
		if s := e.wait(); s != nil && s.project != nil {
			return s.fill(values(in))
		}
		return loadModel(in, model(in), true)
	}
	p, err := loadModel(in, model(in), true)
	if e == nil {
		return p, err
	}
	if v := values(in); err == nil && v.plain() {
		e.s = newShape(in, p, v)
	} else {
		// A box that failed, or that spells a placeholder (and proves
		// nothing of one), leaves its shape to the next box.
		shapes.mu.Lock()
		delete(shapes.m, key)
		shapes.mu.Unlock()
	}
	close(e.made)
	return p, err
}

// known is in's shape's template, nil when it has none (yet).
func known(in Input) *shape {
	key, ok := shapeOf(in)
	if !ok {
		return nil
	}
	shapes.mu.Lock()
	e := shapes.m[key]
	shapes.mu.Unlock()
	if e == nil {
		return nil
	}
	return e.wait()
}

// maxShapes bounds the shapes kept: a fleet whose every box has settings
// of its own gains nothing from them.
const maxShapes = 4096

// shapes are the shapes met so far.
var shapes = struct {
	mu sync.Mutex
	m  map[string]*shapeEntry
}{m: map[string]*shapeEntry{}}

// shapeEntry is a shape met: its template once made is closed, nil
// when it has none.
type shapeEntry struct {
	made chan struct{}
	s    *shape
}

func (e *shapeEntry) wait() *shape {
	<-e.made
	return e.s
}

// loads counts compose-go's loads, for Loads.
var loads atomic.Int64

// Loads is how many projects compose-go's loader has made so far in this
// process: a test holds a plan of many boxes of a few shapes to a few.
func Loads() int64 { return loads.Load() }

// projectNamePattern is what compose takes as a project's name after
// "hbl-" as it is: a name it would change is not put back as it is.
var projectNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// shapeKey is everything of a box's Input but its slots' values: what
// model reads of the box besides its name, and of the rest whether there
// is a token and a kept port (either changes the project's form).
// TestShapeKeyCoversInput holds it to Input's and spec.Box's fields.
type shapeKey struct {
	Settings    spec.Settings
	Fleet, Pool string
	Image       string
	WorkDir     string
	ConfigFile  string
	Token, Port bool
}

// shapeOf is in's shape: the Go syntax of its key, every field, nested
// ones, and maps in key order. A box whose name the loader would not take
// as it is has none.
func shapeOf(in Input) (string, bool) {
	if !projectNamePattern.MatchString(in.Box.Name) {
		return "", false
	}
	return fmt.Sprintf("%#v", shapeKey{Settings: in.Box.Settings, Fleet: in.Box.Fleet, Pool: in.Box.Pool, Image: in.Image,
		WorkDir: in.WorkDir, ConfigFile: in.ConfigFile, Token: in.Token != "", Port: in.HostPort != 0}), true
}

// The slots, and the placeholders that stand for their values in a
// shape's template.
const (
	slotName = iota
	slotToken
	slotPort
	slotGate
	slotCredentials
	slotClosed
	slots
)

var placeholders = [slots]string{
	slotName:        "x0shape0name",
	slotToken:       "x0shape0token",
	slotPort:        "65432",
	slotGate:        "x0shape0gate",
	slotCredentials: "x0shape0credentials",
	slotClosed:      "x0shape0closed",
}

// slotValues are the values of a box's slots.
type slotValues [slots]string

// values are in's values of the slots.
func values(in Input) slotValues {
	b := in.Box
	return slotValues{
		slotName:        b.Name,
		slotToken:       in.Token,
		slotPort:        strconv.Itoa(in.HostPort),
		slotGate:        gateJSON(GateConfig(b, in.Door, in.Token == "")),
		slotCredentials: credentialDigests(b, in.Door),
		slotClosed:      closedLabel(in.Door),
	}
}

// plain reports whether no value spells a placeholder.
func (v slotValues) plain() bool {
	for _, s := range v {
		for _, ph := range placeholders {
			if strings.Contains(s, ph) {
				return false
			}
		}
	}
	return true
}

// shape is a shape's template: its project with placeholders in the
// slots, and each service's hashed JSON cut at the slots; either nil when
// it did not prove itself.
type shape struct {
	project  *types.Project
	services map[string][]piece
}

// piece is a run of a service's JSON, then a slot (-1 for none: the end).
type piece struct {
	text []byte
	slot int
}

// newShape loads in's shape with placeholders in its slots, and keeps what
// of it gives back p, the box's own project, with the box's values v; nil
// when nothing does. What of in is neither in the shape's key nor a slot
// is made different for the load: should the project ever depend on it,
// the template would not give p back, and is not kept.
func newShape(in Input, p *types.Project, v slotValues) *shape {
	ph := in
	ph.Box.Name = placeholders[slotName]
	if in.Token != "" {
		ph.Token = placeholders[slotToken]
	}
	if in.HostPort != 0 {
		ph.HostPort, _ = strconv.Atoi(placeholders[slotPort])
	}
	ph.Door = Door{Closed: append(slices.Clone(in.Door.Closed), "0.0.0.0/32"), Secrets: map[string]string{}}
	for name, secret := range in.Door.Secrets {
		ph.Door.Secrets[name] = secret + "x"
	}
	for _, c := range in.Box.Credentials {
		ph.Door.Secrets[c.Name] += "x"
	}
	ph.Box.Host += "x0shape0host"
	ph.Box.Restore += "x"
	ph.Box.From += "x"
	ph.Box.Line++
	ph.Box.CPUsAt.Line++
	ph.Box.MemoryAt.Line++
	ph.Box.RuntimeAt.Line++
	if ph.Box.State == spec.Stopped {
		ph.Box.State = spec.Running
	} else {
		ph.Box.State = spec.Stopped
	}
	m := model(ph)
	g := m["services"].(map[string]any)[GateService].(map[string]any)
	g["environment"].(map[string]any)[gate.ConfigVar] = placeholders[slotGate]
	labels := g["labels"].(map[string]any)
	labels[CredentialsLabel] = placeholders[slotCredentials]
	labels[ClosedLabel] = placeholders[slotClosed]
	// The box's own load checked the shape against compose's schema.
	tp, err := loadModel(ph, m, false)
	if err != nil {
		return nil
	}
	s := &shape{project: tp}
	if got, err := s.fill(v); err != nil || !reflect.DeepEqual(got, p) {
		s.project = nil
	}
	want, err := ServiceHashes(p)
	if err != nil {
		return nil
	}
	s.services = map[string][]piece{}
	for name, svc := range tp.Services {
		data, err := serviceJSON(svc)
		if err != nil {
			s.services = nil
			break
		}
		s.services[name] = cut(data)
	}
	if s.services != nil && !equalHashes(s.hashes(v), want) {
		s.services = nil
	}
	if s.project == nil && s.services == nil {
		return nil
	}
	return s
}

// fill is the shape's project with v in its slots: a copy of the template
// whose every string that is a slot's placeholder is its value, and the
// name's placeholder within a string (hbl-NAME_agent-data) the name.
func (s *shape) fill(v slotValues) (*types.Project, error) {
	str := func(x string) string {
		for i, ph := range placeholders {
			if x == ph {
				return v[i]
			}
		}
		return strings.ReplaceAll(x, placeholders[slotName], v[slotName])
	}
	out, err := deepCopy(reflect.ValueOf(s.project), str)
	if err != nil {
		return nil, err
	}
	return out.Interface().(*types.Project), nil
}

// deepCopy is a copy of x that shares nothing with it, every string in it
// (map keys too) made str of itself. A func, a channel, or an unexported
// field set cannot be copied.
func deepCopy(x reflect.Value, str func(string) string) (reflect.Value, error) {
	t := x.Type()
	switch x.Kind() {
	case reflect.String:
		out := reflect.New(t).Elem()
		out.SetString(str(x.String()))
		return out, nil
	case reflect.Pointer, reflect.Interface:
		if x.IsNil() {
			return reflect.Zero(t), nil
		}
		e, err := deepCopy(x.Elem(), str)
		if err != nil {
			return x, err
		}
		if x.Kind() == reflect.Interface {
			out := reflect.New(t).Elem()
			out.Set(e)
			return out, nil
		}
		out := reflect.New(t.Elem())
		out.Elem().Set(e)
		return out, nil
	case reflect.Struct:
		out := reflect.New(t).Elem()
		for i := range x.NumField() {
			if !t.Field(i).IsExported() {
				if !x.Field(i).IsZero() {
					return x, fmt.Errorf("%s.%s is not exported", t, t.Field(i).Name)
				}
				continue
			}
			f, err := deepCopy(x.Field(i), str)
			if err != nil {
				return x, err
			}
			out.Field(i).Set(f)
		}
		return out, nil
	case reflect.Map:
		if x.IsNil() {
			return reflect.Zero(t), nil
		}
		out := reflect.MakeMapWithSize(t, x.Len())
		for it := x.MapRange(); it.Next(); {
			k, err := deepCopy(it.Key(), str)
			if err != nil {
				return x, err
			}
			e, err := deepCopy(it.Value(), str)
			if err != nil {
				return x, err
			}
			out.SetMapIndex(k, e)
		}
		return out, nil
	case reflect.Slice:
		if x.IsNil() {
			return reflect.Zero(t), nil
		}
		out := reflect.MakeSlice(t, x.Len(), x.Len())
		for i := range x.Len() {
			e, err := deepCopy(x.Index(i), str)
			if err != nil {
				return x, err
			}
			out.Index(i).Set(e)
		}
		return out, nil
	case reflect.Array:
		out := reflect.New(t).Elem()
		for i := range x.Len() {
			e, err := deepCopy(x.Index(i), str)
			if err != nil {
				return x, err
			}
			out.Index(i).Set(e)
		}
		return out, nil
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		if x.IsNil() {
			return reflect.Zero(t), nil
		}
		return x, errors.New("a " + x.Kind().String() + " cannot be copied")
	}
	return x, nil // a number or a bool, copied with its value
}

// cut cuts a service's JSON at each placeholder: as the whole of a JSON
// string for all but the name, within one for the name.
func cut(data []byte) []piece {
	var marks [slots][]byte
	for i, ph := range placeholders {
		marks[i] = []byte(`"` + ph + `"`)
	}
	marks[slotName] = []byte(placeholders[slotName])
	var out []piece
	for {
		at, slot := -1, -1
		for i, m := range marks {
			if j := bytes.Index(data, m); j >= 0 && (at < 0 || j < at) {
				at, slot = j, i
			}
		}
		if at < 0 {
			return append(out, piece{text: data, slot: -1})
		}
		out = append(out, piece{text: data[:at], slot: slot})
		data = data[at+len(marks[slot]):]
	}
}

// hashes are the config hashes of the shape's services with v in their
// slots.
func (s *shape) hashes(v slotValues) map[string]string {
	var text [slots][]byte
	for i, x := range v {
		text[i], _ = json.Marshal(x) // a string always marshals
	}
	text[slotName] = text[slotName][1 : len(text[slotName])-1]
	out := make(map[string]string, len(s.services))
	h := sha256.New()
	for name, pieces := range s.services {
		h.Reset()
		for _, p := range pieces {
			h.Write(p.text)
			if p.slot >= 0 {
				h.Write(text[p.slot])
			}
		}
		out[name] = hex.EncodeToString(h.Sum(nil))
	}
	return out
}

func equalHashes(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
