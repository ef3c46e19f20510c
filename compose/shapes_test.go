package compose

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"sync"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/hermes-box/boxes/spec"
)

// loadedProject is in's project loaded as it is, with no template: what
// Project and ServiceHashesOf must give.
func loadedProject(t *testing.T, in Input) (*types.Project, map[string]string) {
	t.Helper()
	p, err := loadModel(in, model(in), true)
	if err != nil {
		t.Fatal(err)
	}
	p = finish(in, p)
	h, err := ServiceHashes(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, h
}

// forgetShapes starts the test with no shape known, and leaves none.
func forgetShapes(t *testing.T) {
	reset := func() {
		shapes.mu.Lock()
		shapes.m = map[string]*shapeEntry{}
		shapes.mu.Unlock()
	}
	reset()
	t.Cleanup(reset)
}

// Project and ServiceHashesOf give what compose-go's loader does for every
// box of a shape, whatever its name, token, port and door, and load a
// shape's project twice however many boxes it has; where a value spells a
// placeholder, or a box of the shape does, they still give the loader's.
func TestShapesMakeWhatTheLoaderMakes(t *testing.T) {
	forgetShapes(t)
	withEnv := func(b spec.Box, env map[string]string) spec.Box {
		b.Env = env
		return b
	}
	fixed := box("x")
	fixed.Executor.Port = 8700
	listed := box("x")
	listed.Egress = spec.Egress{Mode: spec.EgressList, Allow: []spec.Destination{{Host: "api.anthropic.com", Port: 443}}}
	listed.Credentials = []spec.Credential{{Name: "anthropic", To: spec.Destination{Host: "api.anthropic.com", Port: 443}, Header: "x-api-key"}}
	listed.DNS = []netip.Addr{netip.MustParseAddr("9.9.9.9")}
	listed.Runtime = "runsc"
	shapesOf := []struct {
		name string
		box  spec.Box
		// kept: its boxes cost two loads in all; else one each, and
		// one more for the template that failed.
		kept bool
	}{
		{"defaults", box("x"), true},
		{"fixed port", fixed, true},
		{"egress, credentials, dns, runtime", listed, true},
		{"odd env", withEnv(box("x"), map[string]string{"EMPTY": "", "DOLLAR": "$HOME ${X}", "QUOTE": `"a" <b> & \c`, "UNICODE": "ünï\u2028"}), true},
		{"env spelling a placeholder", withEnv(box("x"), map[string]string{"A": placeholders[slotGate]}), false},
		{"env spelling the port's", withEnv(box("x"), map[string]string{"A": placeholders[slotPort]}), false},
	}
	names := []string{"alpha", "b00042", "a-much-longer-box-name-0123456"}
	tokens := []string{"tok-0123456789abcdef", `to"k<e>n&\`, "ünï"}
	ports := []int{1, 31000, 65535}
	doors := []Door{
		{},
		{Closed: []string{"192.0.2.7/32"}, Secrets: map[string]string{"anthropic": "sk-1"}},
		{Closed: []string{"2001:db8::1/128", "192.0.2.8/32"}, Secrets: map[string]string{"anthropic": `"quoted" <secret>`}},
	}
	for k, sh := range shapesOf {
		for _, withToken := range []bool{true, false} {
			for _, withPort := range []bool{true, false} {
				if k > 0 && withToken != withPort {
					continue // the form's four ways on the first shape
				}
				before, calls := Loads(), 0
				for i, name := range names {
					b := sh.box
					b.Name = name
					in := input(b)
					in.Door = doors[i]
					in.Token = ""
					if withToken {
						in.Token = tokens[i]
					}
					if withPort {
						in.HostPort = ports[i]
					}
					wantProject, wantHashes := loadedProject(t, in)
					calls++
					got, err := ServiceHashesOf(in)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got, wantHashes) {
						t.Errorf("%s, box %s, token %q, port %d, door %v: hashes\n%v\nwant\n%v", sh.name, name, in.Token, in.HostPort, in.Door, got, wantHashes)
					}
					gotProject, err := Project(in)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(gotProject, wantProject) {
						t.Errorf("%s, box %s, token %q, port %d, door %v: the project is not the loader's", sh.name, name, in.Token, in.HostPort, in.Door)
					}
				}
				// Less the loads of loadedProject; a shape that keeps no
				// template loads each box twice, its first once more.
				loads := Loads() - before - int64(calls)
				want := int64(2)
				if !sh.kept {
					want = 2*int64(calls) + 1
				}
				if loads != want {
					t.Errorf("%s (token %v, port %v): %d boxes loaded %d times; want %d", sh.name, withToken, withPort, calls, loads, want)
				}
			}
		}
	}

	// A box whose name is a placeholder's is hashed right, and teaches
	// nothing: the next box of its shape still makes the template.
	forgetShapes(t)
	ph := placeholders[slotName]
	odd := input(withEnv(box(ph), map[string]string{"A": ph}))
	for _, name := range []string{ph, "alpha", "beta"} {
		in := odd
		in.Box.Name = name
		wantProject, wantHashes := loadedProject(t, in)
		got, err := ServiceHashesOf(in)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, wantHashes) {
			t.Errorf("box %s with env A=%s: hashes %v, want %v", name, ph, got, wantHashes)
		}
		if gotProject, err := Project(in); err != nil || !reflect.DeepEqual(gotProject, wantProject) {
			t.Errorf("box %s with env A=%s: the project is not the loader's (%v)", name, ph, err)
		}
	}
}

// The errors are Project's.
func TestServiceHashesOfErrors(t *testing.T) {
	forgetShapes(t)
	for _, in := range []Input{
		input(box("")),
		{Box: box("alpha")},
		func() Input { in := input(box("alpha")); in.HostPort = 70000; return in }(),
		input(withEnvVar(box("alpha"), TokenVar, "x")),
	} {
		_, want := Project(in)
		_, got := ServiceHashesOf(in)
		if want == nil || got == nil || got.Error() != want.Error() {
			t.Errorf("ServiceHashesOf: %v; Project: %v", got, want)
		}
	}
}

func withEnvVar(b spec.Box, k, v string) spec.Box {
	b.Env = map[string]string{k: v}
	return b
}

// A shape's key holds every field of Input and spec.Box that the project
// depends on, besides the slots; each field it leaves out changes no hash.
// A field added to either fails here until it is placed.
func TestShapeKeyCoversInput(t *testing.T) {
	slotted := map[string]bool{"Name": true, "Token": true, "HostPort": true, "Door": true}
	keyed := map[string]bool{"Settings": true, "Fleet": true, "Pool": true, "Image": true, "WorkDir": true, "ConfigFile": true}
	// Not read by model: where a box is, and what seeds it.
	unread := map[string]func(*spec.Box){
		"Host":      func(b *spec.Box) { b.Host = "nexus" },
		"State":     func(b *spec.Box) { b.State = spec.Stopped },
		"Restore":   func(b *spec.Box) { b.Restore = "backups/a.tar.s2.age" },
		"From":      func(b *spec.Box) { b.From = "base@clean" },
		"Line":      func(b *spec.Box) { b.Line = 42 },
		"CPUsAt":    func(b *spec.Box) { b.CPUsAt = spec.Pos{File: "boxes.yaml", Line: 3, Col: 9} },
		"MemoryAt":  func(b *spec.Box) { b.MemoryAt = spec.Pos{File: "boxes.yaml", Line: 4, Col: 9} },
		"RuntimeAt": func(b *spec.Box) { b.RuntimeAt = spec.Pos{File: "boxes.yaml", Line: 5, Col: 9} },
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[Input](), reflect.TypeFor[spec.Box]()} {
		for f := range typ.Fields() {
			if f.Name == "Box" && typ == reflect.TypeFor[Input]() {
				continue
			}
			if _, ok := unread[f.Name]; !slotted[f.Name] && !keyed[f.Name] && !ok {
				t.Errorf("%s.%s is in no shape's key, no slot, and not known to be unread by model", typ, f.Name)
			}
		}
	}
	base := input(box("alpha"))
	want, _ := loadedProject(t, base)
	key, _ := shapeOf(base)
	for field, change := range unread {
		in := base
		change(&in.Box)
		if k, _ := shapeOf(in); k != key {
			t.Errorf("%s changes the shape's key", field)
		}
		if got, _ := loadedProject(t, in); !reflect.DeepEqual(got, want) {
			t.Errorf("%s changes the project, and is not in the shape's key", field)
		}
	}
}

// Boxes of a new shape made at once (apply's parallel boxes) wait for the
// one that makes its template: the shape is loaded twice, not once a box.
func TestShapeMadeOnce(t *testing.T) {
	forgetShapes(t)
	before := Loads()
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := input(box(fmt.Sprintf("box%02d", i)))
			in.HostPort = 31000 + i
			_, errs[i] = Project(in)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if loads := Loads() - before; loads != 2 {
		t.Errorf("16 boxes of one shape made at once loaded %d projects; want 2", loads)
	}
}
