package cli

import (
	"context"
	"encoding/json"
	"fmt"
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
// configuration registers Debian's runsc (gVisor). Real engine: that docker
// info lists the runtimes a daemon configuration registers, so a box
// asking for one the host lacks is a plan error naming the host and those
// runtimes, with nothing created; that compose's runtime: reaches the
// containers; and that the box's processes, exec, the executor's port,
// hb's checks inside, save's freeze and load's restore work under
// gVisor's own kernel (a fake runs none of it: it would prove only that
// boxes passes a string along). Where gVisor cannot run a box on this
// machine, the box part skips with the error boxes gave, which must say
// what it means.
func TestIntegrationGVisor(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image := testImage(t, "BOXES_TEST_IMAGE", "hermes-box-lite:test")
	lowerScryptCost(t)
	// Each runtime the engine registers for the box: gVisor as the harness
	// notes it (ptrace, which needs no KVM), then with the host's network
	// stack, which this runsc needs where its own refuses the kernel.
	type candidate struct {
		name string
		args []string
	}
	candidates := []candidate{
		{"runsc", []string{"--platform=ptrace"}},
		{"runsc-hostnet", []string{"--platform=ptrace", "--network=host"}},
	}
	runtimes := map[string]testhost.Runtime{}
	runsc, lookErr := exec.LookPath("runsc")
	if lookErr == nil {
		for _, c := range candidates {
			runtimes[c.name] = testhost.Runtime{Path: runsc, Args: c.args}
		}
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
		if lookErr != nil {
			t.Skip("needs runsc (gVisor; Debian's package runsc, see .ci/run)")
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
				box, rt, ready = name, c.name, time.Since(began)
				break
			}
			// Only a refusal boxes recognises and explains is this machine's
			// gVisor; anything else is a failure of boxes.
			if !strings.Contains(r.stderr, "boxes: hint:") || !strings.Contains(r.stderr, "newer runsc") {
				t.Fatalf("apply of a box under %s (%s %s): %+v", c.name, runsc, strings.Join(c.args, " "), r)
			}
			refused = append(refused, fmt.Sprintf("under %s (%s %s), boxes apply said:\n%s", c.name, runsc, strings.Join(c.args, " "), strings.TrimSpace(r.stderr)))
		}
		if box == "" {
			t.Skipf("gVisor cannot run a box on this machine:\n%s", strings.Join(refused, "\n"))
		}
		for _, why := range refused {
			t.Logf("gVisor as the harness notes it did not run the box; went on with %s. Refused %s", rt, why)
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
