package cli

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hermes-box/boxes/image"
	"github.com/hermes-box/boxes/image/build"
	"github.com/hermes-box/boxes/spec"
)

const testBase = "hermes-box-lite-base:bookworm"

// buildDir is a boxes directory and a copy of the recipe to build from, its
// profile.sh marked so that this test's images are its own: the tools
// layers come from the cache of make test-image, the assets do not.
func buildDir(t *testing.T) (dir, recipe string) {
	t.Helper()
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	testImage(t, "BOXES_TEST_BASE", testBase)
	dir, recipe = t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nboxes: {}\n")
	err := fs.WalkDir(image.Recipe, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(image.Recipe, path)
		if err != nil {
			return err
		}
		target := filepath.Join(recipe, path)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	appendTo(t, filepath.Join(recipe, "guest", "profile.sh"), fmt.Sprintf("# build test %d\n", time.Now().UnixNano()))
	return dir, recipe
}

func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// built runs boxes build --json and returns its report; every image it makes
// is removed when the test ends.
func built(t *testing.T, dir string, args ...string) (build.Result, run) {
	t.Helper()
	r := boxes(t, dir, append([]string{"build", "--json"}, args...)...)
	var rep build.Result
	if r.code == 0 {
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("build --json: %v\n%s", err, r.stdout)
		}
		if rep.Built {
			t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", rep.Image).Run() })
		}
	}
	return rep, r
}

var stepStart = regexp.MustCompile(`(?m)^\S+ Step \d+/\d+ : (.*)$`)

// steps maps each instruction of a build's progress to whether it came from the cache.
func steps(progress string) map[string]bool {
	idx := stepStart.FindAllStringSubmatchIndex(progress, -1)
	out := map[string]bool{}
	for i, m := range idx {
		end := len(progress)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		out[progress[m[2]:m[3]]] = strings.Contains(progress[m[1]:end], "(from the cache)")
	}
	return out
}

// cachedStep reports whether the step starting with prefix came from the cache.
func cachedStep(t *testing.T, progress, prefix string) bool {
	t.Helper()
	for instr, cached := range steps(progress) {
		if strings.HasPrefix(instr, prefix) {
			return cached
		}
	}
	t.Fatalf("no step %q in the build progress:\n%s", prefix, progress)
	return false
}

// TestIntegrationBuild: boxes build --offline of an edited recipe rebuilds
// only what the edit touched, records the image in the lock, skips a build
// whose inputs and image are there, runs one all from the cache with
// --force, and builds again once the image is gone. Real engine: the
// builds, their layer cache and the image IDs are the engine's.
func TestIntegrationBuild(t *testing.T) {
	dir, recipe := buildDir(t)
	lockPath := filepath.Join(dir, "boxes.lock")
	tag := "hermes-box-lite:it-build"
	args := []string{"--offline", "--base", testBase, "--recipe", recipe, "--tag", tag}

	// An edited guest file: the tools come from the cache, the assets are rebuilt.
	start := time.Now()
	rep, r := built(t, dir, args...)
	if r.code != 0 {
		t.Fatalf("build: %+v", r)
	}
	t.Logf("build after a guest edit (assets only): %s, %d of %d steps from the cache", time.Since(start).Round(100*time.Millisecond), rep.Cached, rep.Steps)
	if !rep.Built || rep.Ref != tag || !cachedStep(t, r.stderr, "RUN bash /opt/hermes-box/provision/provision.sh") ||
		!cachedStep(t, r.stderr, "COPY provision/") || cachedStep(t, r.stderr, "COPY guest/") {
		t.Errorf("not an assets-only rebuild: %+v\n%s", rep, r.stderr)
	}
	if strings.Contains(r.stderr, "provision: step") {
		t.Errorf("provision.sh ran again:\n%s", r.stderr)
	}
	lock, err := spec.LoadLock(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	if id := dockerOut(t, "image", "inspect", "-f", "{{.Id}}", tag); lock.Image == nil || lock.Image.ID != id || rep.Image != id {
		t.Fatalf("lock image %+v, report %s, docker says %s", lock.Image, rep.Image, id)
	}
	if lock.Image.Inputs != rep.Inputs || lock.Image.Ref != tag || lock.Image.Tools["tmux"] == "" || time.Since(lock.Image.Built) > time.Hour {
		t.Errorf("lock image %+v", lock.Image)
	}
	if out := dockerOut(t, "run", "--rm", "--label", "boxes-test=1", tag, "tail", "-n", "1", "/etc/profile.d/hermes-box.sh"); !strings.HasPrefix(out, "# build test ") {
		t.Errorf("the image lacks the guest edit: %q", out)
	}

	// Same inputs, image present: nothing built, the lock untouched.
	before := readFile(t, lockPath)
	again, r := built(t, dir, args...)
	if r.code != 0 || again.Built || again.Image != rep.Image || strings.Contains(r.stderr, "Step ") {
		t.Errorf("second build was not skipped: %+v\n%s", again, r.stderr)
	}
	if readFile(t, lockPath) != before {
		t.Error("a skipped build rewrote the lock")
	}
	if r := boxes(t, dir, "build", "--offline", "--base", testBase, "--recipe", recipe, "--tag", tag); !strings.Contains(r.stdout, "nothing to build. --force rebuilds") {
		t.Errorf("skipped build says: %s", r.stdout)
	}

	// --force runs the build; every step comes from the cache.
	forced, r := built(t, dir, append(args, "--force")...)
	if r.code != 0 || !forced.Built || forced.Image != rep.Image {
		t.Errorf("forced build: %+v\n%s", forced, r.stderr)
	}
	for instr, cached := range steps(r.stderr) {
		if !cached && !strings.HasPrefix(instr, "FROM") && !strings.HasPrefix(instr, "ARG BASE_IMAGE") {
			t.Errorf("forced build ran %q again", instr)
		}
	}

	// An edit to hb: new inputs, a new image, the lock follows.
	appendTo(t, filepath.Join(recipe, "guest", "hb"), "# edited\n")
	edited, r := built(t, dir, args...)
	if r.code != 0 || !edited.Built || edited.Inputs == rep.Inputs || edited.Image == rep.Image ||
		!cachedStep(t, r.stderr, "RUN bash /opt/hermes-box/provision/provision.sh") || cachedStep(t, r.stderr, "COPY guest/") {
		t.Errorf("build after editing hb: %+v\n%s", edited, r.stderr)
	}
	if lock, _ := spec.LoadLock(lockPath); lock == nil || lock.Image.ID != edited.Image || lock.Image.Inputs != edited.Inputs {
		t.Errorf("lock after editing hb: %+v", lock)
	}

	// The lock's image gone from the engine: same inputs, but built again.
	dockerOut(t, "rmi", "-f", edited.Image)
	rebuilt, r := built(t, dir, args...)
	if r.code != 0 || !rebuilt.Built || rebuilt.Inputs != edited.Inputs {
		t.Errorf("build with the image gone: %+v\n%s", rebuilt, r.stderr)
	}
}

// TestIntegrationBuildRefusals: boxes build and lock update base refused,
// each with its message, the lock unchanged and no tag left. Real engine:
// the failing step, the base the engine lacks and the registry it cannot
// reach are reported by the engine; the other refusals come before boxes
// connects to it.
func TestIntegrationBuildRefusals(t *testing.T) {
	dir, recipe := buildDir(t)
	lockPath := filepath.Join(dir, "boxes.lock")
	lock := "version: 1\npins:\n  codex:\n    version: 0.58.0\n"
	writeFile(t, lockPath, lock)
	failing := t.TempDir()
	for _, d := range []string{"guest", "provision"} {
		if err := os.MkdirAll(filepath.Join(failing, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Fails at once on the base image, so that it leaves no layer behind.
	writeFile(t, filepath.Join(failing, "Dockerfile"), "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nRUN echo 'provision: step node' && exit 3\n")

	for name, tc := range map[string]struct {
		args []string
		want []string
	}{
		"offline without a base": {[]string{"--offline"}, []string{"boxes: error: boxes.lock lacks what the build needs: pins.base (image and digest)\n",
			"boxes: hint: an offline build needs --base IMAGE"}},
		"pins missing": {[]string{"--base", testBase}, []string{"lacks what the build needs: pins.node.version, pins.node.integrity, pins.claude.version",
			"pins.codex.integrity", "pins.hermes.version, pins.uv.version, pins.uv.integrity\n", "boxes: hint: boxes lock update fills the tool pins"}},
		"no such recipe":          {[]string{"--offline", "--base", testBase, "--recipe", filepath.Join(recipe, "nope")}, []string{"boxes: error: --recipe: stat "}},
		"recipe lacks Dockerfile": {[]string{"--offline", "--base", testBase, "--recipe", filepath.Join(recipe, "guest")}, []string{"boxes: error: the recipe has no Dockerfile", "boxes: hint: in a source tree the recipe is the image/ folder"}},
		"failing step": {[]string{"--offline", "--base", testBase, "--recipe", failing, "--tag", "hermes-box-lite:it-build-fails"},
			[]string{"provision: step node", "boxes: error: build failed: The command '/bin/sh -c echo 'provision: step node' && exit 3' returned a non-zero code: 3"}},
		"base the engine lacks": {[]string{"--offline", "--base", "127.0.0.1:1/hermes-box-lite-base:absent", "--recipe", recipe},
			[]string{"boxes: error: --offline: the engine has no image 127.0.0.1:1/hermes-box-lite-base:absent\n", "boxes: hint: an offline build needs a base the engine has"}},
		"unknown flag": {[]string{"--ofline"}, []string{"unknown flag: --ofline"}},
	} {
		t.Run(name, func(t *testing.T) {
			r := boxes(t, dir, append([]string{"build"}, tc.args...)...)
			if r.code != 1 {
				t.Errorf("exit %d, want 1\n%s", r.code, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if got := readFile(t, lockPath); got != lock {
				t.Errorf("a refused build changed the lock:\n%s", got)
			}
		})
	}
	if out, err := exec.Command("docker", "image", "inspect", "hermes-box-lite:it-build-fails").CombinedOutput(); err == nil {
		t.Errorf("a failed build left its tag: %s", out)
	}

	// The base digest comes from the registry through the engine; one that
	// answers nothing is a clear error and changes nothing.
	writeFile(t, lockPath, lock+"  base:\n    image: 127.0.0.1:1/ubuntu:24.04\n")
	lock = readFile(t, lockPath)
	r := boxes(t, dir, "lock", "update", "base")
	if r.code != 1 || !strings.Contains(r.stderr, "boxes: error: base: asking the registry for 127.0.0.1:1/ubuntu:24.04 through the engine: ") {
		t.Errorf("lock update base without a registry: %d\n%s", r.code, r.stderr)
	}
	if got := readFile(t, lockPath); got != lock {
		t.Errorf("a failed lock update changed the lock:\n%s", got)
	}
}
