package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/spec"
)

// TestInitNamesTheSchema: init's boxes.yaml starts with the line editors read,
// naming the schema it writes beside it, and validate keeps that file current.
func TestInitNamesTheSchema(t *testing.T) {
	dir := t.TempDir()
	if r := boxes(t, dir, "init", dir); r.code != 0 {
		t.Fatalf("init: %+v", r)
	}
	yaml := readFile(t, filepath.Join(dir, "boxes.yaml"))
	if first := strings.SplitN(yaml, "\n", 2)[0]; first != "# yaml-language-server: $schema=./boxes.schema.json" {
		t.Errorf("first line of boxes.yaml = %q", first)
	}
	if got := readFile(t, filepath.Join(dir, "boxes.schema.json")); got != string(spec.Schema()) {
		t.Errorf("boxes.schema.json is not boxes schema's output")
	}
	r := boxes(t, dir, "validate")
	if r.code != 0 || strings.Contains(r.stderr, "boxes.schema.json") {
		t.Errorf("validate of a fresh init: %+v", r)
	}
	writeFile(t, filepath.Join(dir, "boxes.schema.json"), "{}\n")
	r = boxes(t, dir, "validate")
	if r.code != 0 || !strings.Contains(r.stderr, "boxes: warning: boxes.schema.json is not this boxes's schema") || !strings.Contains(r.stderr, "boxes: hint: boxes schema > boxes.schema.json") {
		t.Errorf("validate with a stale schema: %+v", r)
	}
	if r := boxes(t, dir, "schema", "--help"); !strings.Contains(r.stdout, "# yaml-language-server: $schema=./boxes.schema.json") {
		t.Errorf("schema --help does not say where the schema goes: %+v", r)
	}
}

func TestValidatePluralsAndJSON(t *testing.T) {
	dir := t.TempDir()
	for yaml, want := range map[string]string{
		"version: 1\nboxes: {a: {}}\n":        "boxes.yaml: 1 box OK\n",
		"version: 1\nboxes: {a: {}, b: {}}\n": "boxes.yaml: 2 boxes OK\n",
		"version: 1\nboxes: {}\n":             "boxes.yaml: 0 boxes OK\n",
	} {
		writeFile(t, filepath.Join(dir, "boxes.yaml"), yaml)
		if r := boxes(t, dir, "validate"); r.code != 0 || r.stdout != want {
			t.Errorf("validate of %q: %+v, want %q", yaml, r, want)
		}
	}
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nboxes: {b: {host: n}, a: {}}\nhosts: {n: {docker: 'ssh://me@n'}}\n")
	r := boxes(t, dir, "validate", "--json")
	var v struct {
		Boxes    []string `json:"boxes"`
		Hosts    []string `json:"hosts"`
		Lock     string   `json:"lock"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || r.code != 0 {
		t.Fatalf("validate --json: %v %+v", err, r)
	}
	if strings.Join(v.Boxes, ",") != "a,b" || strings.Join(v.Hosts, ",") != "n" || v.Lock != "missing" || len(v.Warnings) != 1 {
		t.Errorf("validate --json = %+v", v)
	}
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nboxes: {A: {}}\n")
	// The errors are JSON on stdout, each at its place, and text on stderr.
	r = boxes(t, dir, "validate", "--json")
	var bad errorsJSON
	if err := json.Unmarshal([]byte(r.stdout), &bad); err != nil || r.code != 1 || !strings.Contains(r.stderr, "boxes.yaml:2:") {
		t.Fatalf("validate --json of a bad file: %v %+v", err, r)
	}
	if bad.FormatVersion != ErrorsFormat || len(bad.Errors) != 1 || !strings.HasSuffix(bad.Errors[0].File, "boxes.yaml") || bad.Errors[0].Line != 2 || bad.Errors[0].Message == "" || bad.Errors[0].Hint == "" {
		t.Errorf("validate --json of a bad file: %+v", bad)
	}
}

func TestVersionJSON(t *testing.T) {
	r := boxes(t, t.TempDir(), "version", "--json")
	var v struct{ Version, Go, OS, Arch string }
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || r.code != 0 || v.Version == "" || !strings.HasPrefix(v.Go, "go") || v.OS == "" {
		t.Errorf("version --json: %v %+v", err, r)
	}
}
