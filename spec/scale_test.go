package spec

import (
	"fmt"
	"strings"
	"testing"
)

// Every clash of fixed executor ports is reported, in the boxes' order,
// each against every box before it on the same host whose bind overlaps;
// another host, or another port, is no clash.
func TestPortClashesInOrder(t *testing.T) {
	_, err := Parse("boxes.yaml", []byte(`version: 1
hosts:
  n: {docker: "ssh://x@192.0.2.1"}
boxes:
  a: {executor: {port: 4800}}
  b: {executor: {port: 4800, bind: 0.0.0.0}}
  c: {executor: {port: 4800, bind: "::"}}
  d: {executor: {port: 4800}}
  e: {host: n, executor: {port: 4800}}
  f: {executor: {port: 4801}}
  g: {executor: {port: 4800, bind: "::1"}}
`))
	want := `boxes.yaml:6:24: box b publishes executor port 4800 on 0.0.0.0, which box a (line 5) already uses
boxes.yaml:8:24: box d publishes executor port 4800 on 127.0.0.1, which box a (line 5) already uses
boxes.yaml:8:24: box d publishes executor port 4800 on 127.0.0.1, which box b (line 6) already uses
boxes.yaml:11:24: box g publishes executor port 4800 on ::1, which box c (line 7) already uses`
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
}

// Box finds a box by name among thousands, after Boxes is replaced too
// (as WithPools does), and a box renamed in place.
func TestConfigBox(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("version: 1\nboxes:\n")
	for i := range 3000 {
		fmt.Fprintf(&sb, "  b%04d: {}\n", i)
	}
	cfg, err := Parse("boxes.yaml", []byte(sb.String()))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"b0000", "b1234", "b2999"} {
		if b, ok := cfg.Box(name); !ok || b.Name != name {
			t.Errorf("Box(%s) = %s, %v", name, b.Name, ok)
		}
	}
	if _, ok := cfg.Box("b3000"); ok {
		t.Errorf("Box(b3000) found a box that is not there")
	}
	cfg.Boxes = append([]Box{{Name: "a-first"}}, cfg.Boxes[:10]...)
	if b, ok := cfg.Box("a-first"); !ok || b.Name != "a-first" {
		t.Errorf("after Boxes is replaced, Box(a-first) = %s, %v", b.Name, ok)
	}
	if _, ok := cfg.Box("b1234"); ok {
		t.Errorf("after Boxes is replaced, Box(b1234) found a box no longer there")
	}
	cfg.Boxes[1].Name = "renamed"
	if _, ok := cfg.Box("renamed"); !ok {
		t.Errorf("Box(renamed) after a rename in place: not found")
	}
	if _, ok := cfg.Box("b0000"); ok {
		t.Errorf("Box(b0000) after its rename in place: found")
	}
}
