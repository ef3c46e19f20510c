package cli

import (
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/internal/testhost"
)

// TestIntegrationGVisor: a box with runtime: runsc on an engine whose daemon
// configuration registers gVisor's runsc: Debian's, and the one .ci/run
// builds at a pinned version (pinnedRunsc). Real engine: that docker
// info lists the runtimes a daemon configuration registers, so a box
// asking for one the host lacks is a plan error naming the host and those
// runtimes, with nothing created; that compose's runtime: reaches the
// containers; and that the box's processes, exec, the executor's port,
// hb's checks inside, save's freeze and load's restore work under
// gVisor's own kernel (a fake runs none of it: it would prove only that
// boxes passes a string along). Debian's runsc cannot run a box on a
// recent kernel: what boxes says of it must say what it means. The pinned
// runsc must run the box; without it (and with Debian's refused) the box
// part skips with the errors boxes gave.
func TestIntegrationGVisor(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image := testImage(t, "BOXES_TEST_IMAGE", "hermes-box-lite:test")
	lowerScryptCost(t)
	// Each runtime the engine registers for a box, tried in turn: Debian's
	// runsc on ptrace (which needs no KVM), then with the host's network
	// stack, which it needs where its own refuses the kernel; then the
	// pinned runsc as docs/box.md registers it (systrap, its default, and
	// the host's network stack: gVisor's own cannot reach the engine's DNS
	// server on the box's network), which must run the box.
	type candidate struct {
		name, path string
		args       []string
		must       bool
	}
	var candidates []candidate
	debian, lookErr := exec.LookPath("runsc")
	if lookErr == nil {
		candidates = append(candidates,
			candidate{"runsc", debian, []string{"--platform=ptrace"}, false},
			candidate{"runsc-hostnet", debian, []string{"--platform=ptrace", "--network=host"}, false})
	}
	pinned, pinnedVersion := pinnedRunsc(t)
	if pinnedVersion != "" {
		candidates = append(candidates, candidate{"runsc-pinned", pinned, []string{"--network=host"}, true})
	}
	runtimes := map[string]testhost.Runtime{}
	for _, c := range candidates {
		runtimes[c.name] = testhost.Runtime{Path: c.path, Args: c.args}
	}
	e := testhost.Start(t, testhost.Options{TLS: true, Images: []string{image}, Runtimes: runtimes})

	dir := t.TempDir()
	// A fleet of its own: its plans see no other test's boxes.
	write := func(boxesYAML string) {
		writeFile(t, filepath.Join(dir, "boxes.yaml"), fmt.Sprintf("version: 1\nfleet: it-gvisor\nhosts:\n  gv: {docker: %q, tls: %q}\nboxes:\n%s", e.TCP, e.TLSDir, boxesYAML))
	}
	write("  it-gv-nope:\n    host: gv\n    runtime: nope\n")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}

	t.Run("a runtime the host lacks", func(t *testing.T) {
		want := "box it-gv-nope asks for runtime: nope (" + filepath.Join(dir, "boxes.yaml") + ":8:14), but host gv has only io.containerd.runc.v2, io.containerd.runtime.v1.linux, runc"
		for _, args := range [][]string{{"plan"}, {"apply", "--auto-approve"}} {
			r := boxes(t, dir, args...)
			if r.code != 1 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "boxes: hint: register it in that engine's daemon configuration") {
				t.Errorf("%s: %+v\nwant exit 1 and %q", args[0], r, want)
			}
			if lookErr == nil && !strings.Contains(r.stderr, ", runsc") {
				t.Errorf("%s does not list the registered runsc: %s", args[0], r.stderr)
			}
		}
		if n := resourcesOn(t, e, "it-gv-nope"); n != 0 {
			t.Errorf("the refused plan left %d resources of the box on the engine", n)
		}
	})

	// A box under the engine's default runtime first: the baseline to
	// compare with, and the image's layers warmed the same way for both.
	write("  it-gv-runc: {host: gv, executor: {bind: 0.0.0.0}}\n")
	began := time.Now()
	if r := boxes(t, dir, "apply", "--auto-approve", "--target", "it-gv-runc"); r.code != 0 {
		t.Fatalf("apply of a runc box: %+v", r)
	}
	runcReady := time.Since(began)
	hostKernel := strings.TrimSpace(boxes(t, dir, "exec", "it-gv-runc", "--", "uname", "-r").stdout)

	t.Run("a box under gVisor", func(t *testing.T) {
		if len(candidates) == 0 {
			t.Skipf("needs runsc (gVisor): none at %s nor on PATH (.ci/run builds it)", pinned)
		}
		var box, rt string
		var refused []string
		declared := "  it-gv-runc: {host: gv, executor: {bind: 0.0.0.0}}\n"
		var ready time.Duration
		for _, c := range candidates {
			name := "it-gv-" + c.name
			declared += fmt.Sprintf("  %s: {host: gv, runtime: %s, executor: {bind: 0.0.0.0}}\n", name, c.name)
			write(declared)
			began := time.Now()
			r := boxes(t, dir, "apply", "--auto-approve", "--target", name)
			if r.code == 0 {
				// The pinned runsc is the one the rest is proved on, also
				// where Debian's runs a box too.
				if box == "" || c.must {
					box, rt, ready = name, c.name, time.Since(began)
				}
				continue
			}
			// The pinned runsc must run it. Of Debian's, only a refusal boxes
			// recognises and explains is this machine's gVisor; anything
			// else is a failure of boxes.
			if c.must || !strings.Contains(r.stderr, "boxes: hint:") || !strings.Contains(r.stderr, "newer runsc") {
				t.Fatalf("apply of a box under %s (%s %s): %+v", c.name, c.path, strings.Join(c.args, " "), r)
			}
			refused = append(refused, fmt.Sprintf("under %s (%s %s), boxes apply said:\n%s", c.name, c.path, strings.Join(c.args, " "), strings.TrimSpace(r.stderr)))
		}
		if box == "" {
			t.Skipf("Debian's runsc cannot run a box on this machine, and there is no runsc at %s (.ci/run builds it):\n%s", pinned, strings.Join(refused, "\n"))
		}
		for _, why := range refused {
			t.Logf("went on with %s. Refused %s", rt, why)
		}
		if rt == "runsc-pinned" {
			t.Logf("%s is gVisor's runsc %s", pinned, pinnedVersion)
		}
		t.Logf("time to ready of one new box on the same engine: runc %s, %s %s (%.2f×)",
			runcReady.Round(time.Millisecond), rt, ready.Round(time.Millisecond), float64(ready)/float64(runcReady))

		// Its processes see gVisor's kernel, not the machine's.
		if r := boxes(t, dir, "exec", box, "--", "uname", "-r"); r.code != 0 || strings.TrimSpace(r.stdout) == hostKernel {
			t.Errorf("uname -r in the gVisor box %+v, the runc box says %q", r, hostKernel)
		}
		doctor := func(name string) {
			t.Helper()
			r := boxes(t, dir, "doctor", name)
			if r.code != 0 || !strings.Contains(r.stdout, "agent runtime") || !strings.Contains(r.stdout, rt+", as boxes.yaml says") {
				t.Errorf("doctor %s: %+v", name, r)
			}
			r = boxes(t, dir, "doctor", name, "--json")
			var rep struct {
				OK      bool   `json:"ok"`
				Runtime string `json:"runtime"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || !rep.OK || rep.Runtime != rt {
				t.Errorf("doctor %s --json: %+v (%v)", name, r, err)
			}
		}
		doctor(box)

		const proof = "written under gVisor"
		if r := boxes(t, dir, "exec", box, "--", "sh", "-c", "echo '"+proof+"' > proof"); r.code != 0 {
			t.Fatalf("writing a file: %+v", r)
		}
		if r := boxes(t, dir, "apply", "--auto-approve", "--replace", box, "--target", box); r.code != 0 {
			t.Fatalf("apply --replace: %+v", r)
		}
		if r := boxes(t, dir, "exec", box, "--", "cat", "proof"); r.stdout != proof+"\n" {
			t.Errorf("after the recreate: %+v", r)
		}
		doctor(box)

		t.Setenv(backup.EnvPassphrase, "correct horse battery staple")
		file := filepath.Join(t.TempDir(), "gv"+archive.Ext)
		if r := boxes(t, dir, "save", box, "-o", file); r.code != 0 {
			t.Fatalf("save: %+v", r)
		}
		write(declared + fmt.Sprintf("  it-gv-copy: {host: gv, runtime: %s, executor: {bind: 0.0.0.0}}\n", rt))
		if r := boxes(t, dir, "load", file, "it-gv-copy"); r.code != 0 || !strings.Contains(r.stdout, "box it-gv-copy is healthy") {
			t.Fatalf("load: %+v", r)
		}
		if r := boxes(t, dir, "exec", "it-gv-copy", "--", "cat", "proof"); r.stdout != proof+"\n" {
			t.Errorf("in the loaded box: %+v", r)
		}
		doctor("it-gv-copy")
	})
}

// resourcesOn counts box's labelled containers, volumes and networks on e.
func resourcesOn(t *testing.T, e *testhost.Engine, box string) int {
	t.Helper()
	ctx := context.Background()
	f := filters.NewArgs(filters.Arg("label", compose.BoxLabel+"="+box))
	cs, err := e.Client().ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := e.Client().VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := e.Client().NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	return len(cs) + len(vs.Volumes) + len(ns)
}

// pinnedRunsc is where .ci/run builds gVisor's runsc at the version it pins
// (BOXES_TEST_RUNSC names another), and the version of gVisor it was built
// from; "" when there is none there.
func pinnedRunsc(t *testing.T) (path, version string) {
	t.Helper()
	path = os.Getenv("BOXES_TEST_RUNSC")
	if path == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "(no cache directory: " + err.Error() + ")", ""
		}
		path = filepath.Join(cache, "boxes-gvisor", "runsc")
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return path, ""
	}
	info, err := buildinfo.ReadFile(path)
	if err != nil || info.Main.Path != "gvisor.dev/gvisor" {
		t.Fatalf("%s is not a runsc built from gvisor.dev/gvisor (%v)", path, err)
	}
	return path, info.Main.Version
}
