package image

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/docker"
)

// A source tree's image/ given as --recipe contributes only what the built-in
// recipe holds: no Go sources beside the Dockerfile, no tests, no other
// directories.
func TestRecipeFromASourceTree(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"Dockerfile", "recipe.go", "build/build.go", "guest/hb", "guest/guest_integration_test.go",
		"provision/provision.sh", "README.md", ".git/HEAD"} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(name+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fsys, err := RecipeDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	bc, err := docker.NewBuildContext(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(bc.Names(), " "), "Dockerfile guest/hb provision/provision.sh"; got != want {
		t.Errorf("context %q, want %q", got, want)
	}
	for _, name := range []string{"recipe.go", "build/build.go"} {
		if _, err := fs.Stat(fsys, name); err == nil {
			t.Errorf("%s, outside the recipe, can be opened", name)
		}
	}
	if _, err := RecipeDir(filepath.Join(dir, "README.md")); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("a file as --recipe: %v", err)
	}
}
