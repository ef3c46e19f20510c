package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestImportsAreWhatBoxesLinks fails when the imports*_linux.go files are
// not what gen.go writes now (boxes gained or lost a dependency: go generate
// ./internal/initfloor), and when the floor does not link exactly the
// packages of other modules boxes links, internal ones included.
func TestImportsAreWhatBoxesLinks(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	fresh := t.TempDir()
	if out, err := exec.Command("go", "run", "gen.go", "-dir", fresh).CombinedOutput(); err != nil {
		t.Fatalf("go run gen.go: %v\n%s", err, out)
	}
	if got, want := generated(t, "."), generated(t, fresh); got != want {
		t.Errorf("the imports are not what boxes links now: run go generate ./internal/initfloor\n%s", lineDiff(got, want))
	}

	boxes, floor := linked(t, "github.com/hermes-box/boxes/cmd/boxes"), linked(t, "github.com/hermes-box/boxes/internal/initfloor")
	if len(boxes) < 100 {
		t.Fatalf("boxes links %d packages of other modules: %v", len(boxes), boxes)
	}
	if !slices.Equal(boxes, floor) {
		t.Errorf("the floor links other packages than boxes:\n%s", lineDiff(strings.Join(floor, "\n"), strings.Join(boxes, "\n")))
	}
}

// generated are the files gen.go writes in dir, one after another.
func generated(t *testing.T, dir string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "imports*_linux.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no imports*_linux.go in %s (%v)", dir, err)
	}
	var all strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.WriteString("// " + filepath.Base(f) + "\n")
		all.Write(data)
	}
	return all.String()
}

// linked are the packages of other modules than boxes' that pkg links on
// Linux, sorted.
func linked(t *testing.T, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg)
	cmd.Env = append(os.Environ(), "GOOS=linux")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	var ps []string
	for _, p := range strings.Fields(string(out)) {
		if p != module && !strings.HasPrefix(p, module+"/") {
			ps = append(ps, p)
		}
	}
	slices.Sort(ps)
	return ps
}

const module = "github.com/hermes-box/boxes"

// lineDiff lists the lines only got has (-) and only want has (+).
func lineDiff(got, want string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	g, w := in(got), in(want)
	var out []string
	for _, l := range strings.Split(got, "\n") {
		if !w[l] {
			out = append(out, "- "+l)
		}
	}
	for _, l := range strings.Split(want, "\n") {
		if !g[l] {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}
