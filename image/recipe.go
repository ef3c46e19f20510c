// Package image is the box image's recipe as boxes builds it: the Dockerfile,
// provision/ and guest/ at the repository's root (embedded by package boxes,
// so that an installed boxes binary builds the image without the source
// tree), and the build arguments made from the pins. Building it is
// image/build's.
package image

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	boxes "github.com/hermes-box/boxes"
	"github.com/hermes-box/boxes/spec"
)

// Recipe is the build context of the box image: the Dockerfile, provision/
// and guest/ at the repository's root, embedded there (package boxes).
var Recipe fs.FS = boxes.Recipe

// Dockerfile is the recipe's Dockerfile, relative to the root of Recipe.
const Dockerfile = "Dockerfile"

// GateFile is the context file the Dockerfile copies as the box's gate:
// not part of the recipe, boxes build adds the running boxes binary as it.
const GateFile = "boxes-gate"

// The network installs of provision.sh, each switched by INSTALL_<NAME>:
// the system packages, and one per tool pin.
var installs = func() []string {
	names := []string{"APT"}
	for _, d := range spec.PinDefs {
		if d.Install != "" {
			names = append(names, d.Install)
		}
	}
	return names
}()

// BuildArgs are the Dockerfile's build arguments for pins. base, when set,
// replaces the lock's base image (a mirror, or a local base for an offline
// build). With offline every network install is off, and no tool pin is
// needed or passed. A pin the build needs but the lock lacks is an error
// naming every one of them.
func BuildArgs(p spec.Pins, base string, offline bool) (map[string]string, error) {
	args := map[string]string{}
	var missing []string
	switch {
	case base != "":
		args["BASE_IMAGE"] = base
	case p.Base.Image != "" && (p.Base.Digest != "" || offline):
		args["BASE_IMAGE"] = baseRef(p.Base)
	default:
		missing = append(missing, "pins.base (image and digest)")
	}
	if offline {
		for _, name := range installs {
			args["INSTALL_"+name] = "0"
		}
		return args, missingPins(missing)
	}
	for _, d := range spec.PinDefs {
		if d.VersionArg == "" {
			continue
		}
		pin := *p.Tool(d.Name)
		if pin.Version == "" {
			missing = append(missing, "pins."+d.Name+".version")
		}
		args[d.VersionArg] = pin.Version
		if d.IntegrityArg == "" {
			continue
		}
		if pin.Integrity == "" {
			missing = append(missing, "pins."+d.Name+".integrity")
		}
		// provision.sh checks downloads against bare hex digests.
		args[d.IntegrityArg] = strings.TrimPrefix(pin.Integrity, "sha256:")
	}
	return args, missingPins(missing)
}

// baseRef is the base image reference with its digest: a tag and a digest
// together name exactly the digest, and keep the tag for the reader.
func baseRef(b spec.BasePin) string {
	if b.Digest == "" || strings.Contains(b.Image, "@") {
		return b.Image
	}
	return b.Image + "@" + b.Digest
}

func missingPins(missing []string) error {
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("boxes.lock lacks what the build needs: %s", strings.Join(missing, ", "))
}

// RecipeDir is the recipe in directory dir (--recipe: a source tree's root), seen through the built-in recipe's names; "" is the built-in recipe.
func RecipeDir(dir string) (fs.FS, error) {
	if dir == "" {
		return Recipe, nil
	}
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("--recipe: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("--recipe %s is not a directory", dir)
	}
	// Only what the built-in recipe holds: a source tree has more.
	return recipeSubset{os.DirFS(dir)}, nil
}

// recipeSubset is a directory seen through the built-in recipe's top-level
// names (Dockerfile, provision/, guest/).
type recipeSubset struct{ fs.FS }

func (r recipeSubset) Open(name string) (fs.File, error) {
	if name != "." && !inRecipe(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return r.FS.Open(name)
}

func (r recipeSubset) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, err := fs.ReadDir(r.FS, name)
	if err != nil {
		return nil, err
	}
	kept := entries[:0]
	for _, e := range entries {
		if inRecipe(path.Join(name, e.Name())) {
			kept = append(kept, e)
		}
	}
	return kept, nil
}

func inRecipe(name string) bool {
	top, _, _ := strings.Cut(name, "/")
	switch top {
	case "provision", "guest":
		return true
	case Dockerfile:
		return name == Dockerfile
	}
	return false
}
