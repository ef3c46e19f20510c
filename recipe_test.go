package boxes

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

func TestRecipeHoldsTheBuildContext(t *testing.T) {
	for _, name := range []string{
		"docker/Dockerfile",
		"provision/provision.sh",
		"provision/lib.sh",
		"guest/hb",
		"guest/profile.sh",
		"guest/tmux.conf",
	} {
		info, err := fs.Stat(Recipe, name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !info.Mode().IsRegular() || info.Size() == 0 {
			t.Errorf("%s: mode %v, size %d", name, info.Mode(), info.Size())
		}
	}
}

// Every COPY source of the Dockerfile must be in the embedded context, or a
// build from an installed binary fails where one from the tree works.
func TestRecipeHasEveryCopySource(t *testing.T) {
	dockerfile, err := fs.ReadFile(Recipe, "docker/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	copies := regexp.MustCompile(`(?m)^COPY\s+(.+)$`).FindAllStringSubmatch(string(dockerfile), -1)
	if len(copies) == 0 {
		t.Fatal("the Dockerfile has no COPY")
	}
	for _, c := range copies {
		fields := strings.Fields(c[1])
		for _, src := range fields[:len(fields)-1] {
			if strings.HasPrefix(src, "--") {
				continue
			}
			if _, err := fs.Stat(Recipe, strings.TrimSuffix(src, "/")); err != nil {
				t.Errorf("COPY %s: %v", src, err)
			}
		}
	}
}

// embed drops the exec bit, so no script of the recipe may be executed in
// place: the Dockerfile runs provision.sh through bash and installs hb with
// an explicit mode.
func TestRecipeDoesNotNeedExecBits(t *testing.T) {
	err := fs.WalkDir(Recipe, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode()&0o111 != 0 {
			t.Errorf("%s: embedded with exec bits %v; the checks below assume none", path, info.Mode())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dockerfile, _ := fs.ReadFile(Recipe, "docker/Dockerfile")
	for _, want := range []string{
		"RUN bash /opt/hermes-box/provision/provision.sh",
		"install -m 0755 /opt/hermes-box/guest/hb /usr/local/bin/hb",
	} {
		if !strings.Contains(string(dockerfile), want) {
			t.Errorf("the Dockerfile does not contain %q", want)
		}
	}
	provision, _ := fs.ReadFile(Recipe, "provision/provision.sh")
	if regexp.MustCompile(`(?m)^\s*"?\$here/lib\.sh`).Match(provision) {
		t.Error("provision.sh executes lib.sh in place; source it")
	}
}
