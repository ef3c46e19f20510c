package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/image/build"
	"github.com/hermes-box/boxes/spec"
)

func TestInitWritesAndNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".gitignore"), "/bin/")
	r := boxes(t, dir, "init", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "boxes.yaml") {
		t.Fatalf("init: %+v", r)
	}
	if got := readFile(t, filepath.Join(dir, ".gitignore")); got != "/bin/\n.boxes/\nbackups/\n" {
		t.Errorf(".gitignore %q", got)
	}
	if r := boxes(t, dir, "validate"); r.code != 0 || strings.Contains(r.stderr, "fleet") {
		t.Errorf("the scaffold does not validate cleanly: %+v", r)
	}
	if got := readFile(t, filepath.Join(dir, "boxes.yaml")); !strings.Contains(got, "\nfleet: "+filepath.Base(dir)+"\n") {
		t.Errorf("the scaffold does not name the fleet after its directory:\n%s", got)
	}
	// Not writeFile: it names the tests' fleet.
	if err := os.WriteFile(filepath.Join(dir, "boxes.yaml"), []byte("version: 1\nboxes: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := boxes(t, dir, "validate"); r.code != 0 || !strings.Contains(r.stderr, "has no fleet: key; its boxes are fleet \""+filepath.Base(dir)+"\"") {
		t.Errorf("validate without fleet: does not warn: %+v", r)
	}
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nboxes:\n  a:\n    env:\n      BIG: "+strings.Repeat("x", 200<<10)+"\n")
	if r := boxes(t, dir, "validate"); r.code != 1 || !strings.Contains(r.stderr, "boxes.yaml:5:12: env BIG is 200.0 KiB") {
		t.Errorf("validate of a 200 KiB env value: %+v", r)
	}
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\n# mine\n")
	r = boxes(t, dir, "init", dir)
	if r.code != 1 || !strings.Contains(r.stderr, "already exists; not overwriting it") {
		t.Errorf("second init: %+v", r)
	}
	if got := readFile(t, filepath.Join(dir, "boxes.yaml")); got != "version: 1\n# mine\n" {
		t.Errorf("init overwrote boxes.yaml: %q", got)
	}
	if got := readFile(t, filepath.Join(dir, ".gitignore")); strings.Count(got, ".boxes/") != 1 {
		t.Errorf(".gitignore after a second init: %q", got)
	}
}

func TestValidate(t *testing.T) {
	hex64 := strings.Repeat("ab", 32)
	full := spec.Pins{
		Base:     spec.BasePin{Image: "ubuntu:24.04", Digest: "sha256:" + hex64},
		Node:     spec.ToolPin{Version: "24.11.0", Integrity: "sha256:" + hex64},
		UV:       spec.ToolPin{Version: "0.9.11", Integrity: "sha256:" + hex64},
		Claude:   spec.ToolPin{Package: "@anthropic-ai/claude-code", Version: "2.0.32", Integrity: "sha512-" + strings.Repeat("A", 86) + "=="},
		Codex:    spec.ToolPin{Package: "@openai/codex", Version: "0.58.0", Integrity: "sha512-" + strings.Repeat("B", 86) + "=="},
		Executor: spec.ToolPin{Package: "executor", Version: "1.2.0", Integrity: "sha512-" + strings.Repeat("C", 86) + "=="},
		Hermes:   spec.ToolPin{Version: strings.Repeat("d", 40)},
	}
	current := &spec.Lock{Version: 1, Pins: full}
	inputs, ok := build.CurrentInputs(current)
	if !ok {
		t.Fatal("complete pins give no inputs digest")
	}
	image := func(inputs string) *spec.Image { return &spec.Image{ID: "sha256:" + hex64, Inputs: inputs} }

	for name, tc := range map[string]struct {
		yaml string
		lock *spec.Lock // nil: no boxes.lock
		code int
		out  []string // in stdout
		err  []string // in stderr
	}{
		"no lock": {yaml: "version: 1\nboxes: {a: {}}\n", code: 0, out: []string{"boxes.yaml: 1 box OK"},
			err: []string{"boxes: warning: boxes.lock not found", "boxes: hint: boxes lock update, then boxes build"}},
		"lock without image": {yaml: "version: 1\nboxes: {}\n", lock: &spec.Lock{Version: 1, Pins: full}, code: 0,
			err: []string{"boxes.lock has pins but no image", "boxes: hint: boxes build makes it"}},
		"current image": {yaml: "version: 1\nboxes: {}\n", lock: &spec.Lock{Version: 1, Pins: full, Image: image(inputs)}, code: 0,
			out: []string{"boxes.lock: image sha256:" + hex64 + " OK"}},
		"image from other inputs": {yaml: "version: 1\nboxes: {}\n", lock: &spec.Lock{Version: 1, Pins: full, Image: image("sha256:" + strings.Repeat("0", 64))}, code: 0,
			err: []string{"image.inputs is not the digest of this recipe and these pins", "boxes: hint: boxes build makes the image of the current pins"}},
		"pinned image (no inputs)": {yaml: "version: 1\nboxes: {}\n", lock: &spec.Lock{Version: 1, Image: image("")}, code: 0,
			out: []string{" OK"}},
		"bad boxes.yaml": {yaml: "version: 1\nboxes:\n  alpha: {cpu: 2}\n", code: 1,
			err: []string{"boxes.yaml:3:11: unknown key \"cpu\"", `did you mean "cpus"?`}},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "boxes.yaml"), tc.yaml)
			if tc.lock != nil {
				if err := spec.WriteLock(filepath.Join(dir, "boxes.lock"), tc.lock); err != nil {
					t.Fatal(err)
				}
			}
			r := boxes(t, dir, "validate")
			if r.code != tc.code {
				t.Errorf("exit %d, want %d\n%s%s", r.code, tc.code, r.stdout, r.stderr)
			}
			for _, w := range tc.out {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, r.stdout)
				}
			}
			for _, w := range tc.err {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if strings.Contains(r.stderr, "image.inputs") != (name == "image from other inputs") {
				t.Errorf("inputs warning where it does not belong:\n%s", r.stderr)
			}
		})
	}

	// A bad lock is an error with its position, and validate writes nothing.
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nboxes: {}\n")
	bad := "version: 1\npins:\n  node:\n    version: latest\n"
	writeFile(t, filepath.Join(dir, "boxes.lock"), bad)
	r := boxes(t, dir, "validate")
	if r.code != 1 || !strings.Contains(r.stderr, `boxes.lock:4:14: pins.node.version "latest" is not an exact version like 1.2.3`) {
		t.Errorf("bad lock: %+v", r)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "boxes.lock")); string(got) != bad {
		t.Errorf("validate changed the lock: %q", got)
	}
}
