package spec

import "testing"

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
