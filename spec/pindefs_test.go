package spec

import (
	"reflect"
	"testing"
)

// TestPinDefsMatchPins: every field of Pins is one PinDef's, each tool pin's
// accessor reaches its own field, and a kind's fields are the parser's.
func TestPinDefsMatchPins(t *testing.T) {
	if n := reflect.TypeOf(Pins{}).NumField(); n != len(PinDefs) {
		t.Fatalf("Pins has %d fields, PinDefs %d", n, len(PinDefs))
	}
	var p Pins
	seen := map[*ToolPin]string{}
	for _, d := range PinDefs {
		tool := p.Tool(d.Name)
		if (d.Kind == BaseImage) != (tool == nil) {
			t.Errorf("%s: kind %d, Tool %v", d.Name, d.Kind, tool)
		}
		if tool == nil {
			continue
		}
		if other, ok := seen[tool]; ok {
			t.Errorf("%s and %s share a field", d.Name, other)
		}
		seen[tool] = d.Name
		if d.VersionArg == "" || d.Install == "" || (d.Kind == GitRef) != (d.IntegrityArg == "") {
			t.Errorf("%s: build arguments %q %q, install %q", d.Name, d.VersionArg, d.IntegrityArg, d.Install)
		}
		if (d.Kind == NPMPackage) != (d.Package != "") {
			t.Errorf("%s: package %q for kind %d", d.Name, d.Package, d.Kind)
		}
	}
	if _, ok := PinDefOf("nope"); ok || p.Tool("base") != nil {
		t.Error("an unknown name or base was taken for a tool")
	}
}
