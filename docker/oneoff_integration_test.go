package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hermes-box/boxes/spec"
)

// A throwaway container that a killed command left mounting a box's volume
// (a fork's helper cut short) no longer stops the volume's
// removal: it is removed first. Real engine: the refusal worked around is
// the engine's own, to remove a volume a container still mounts.
func TestIntegrationRemoveVolumeLeftOneOff(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	ctx := context.Background()
	const vol = "hbl-it-h11c-oneoff_agent-data"
	image := "hermes-box-lite:test"
	cleanup := func() {
		ids, _ := exec.Command("docker", "ps", "-aq", "--filter", "volume="+vol).Output()
		for _, id := range strings.Fields(string(ids)) {
			_ = exec.Command("docker", "rm", "-f", id).Run()
		}
		_ = exec.Command("docker", "volume", "rm", "-f", vol).Run()
	}
	cleanup()
	t.Cleanup(cleanup)
	dockerRun(t, "volume", "create", vol)
	left := dockerRun(t, "create", "--label", oneOffLabel+"=1", "--network", "none", "-v", vol+":/data", "--entrypoint", "true", image)

	e, err := Connect(ctx, spec.Host{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.RemoveVolume(ctx, vol); err != nil {
		t.Fatalf("RemoveVolume with a throwaway container left on it: %v", err)
	}
	if out, _ := exec.Command("docker", "volume", "inspect", vol).CombinedOutput(); !strings.Contains(strings.ToLower(string(out)), "no such volume") {
		t.Errorf("the volume is still there: %s", out)
	}
	if out, _ := exec.Command("docker", "inspect", left).CombinedOutput(); !strings.Contains(strings.ToLower(string(out)), "no such") {
		t.Errorf("the throwaway container is still there: %s", out)
	}
}

// VolumeRoom measures the file system a box's volume lives on (a fresh
// anonymous volume is where a named local one is), leaves nothing behind,
// and removes a measure a killed command left for the same box, with its
// volume, but not another box's fresh one. Real engine: where the engine
// puts volumes, and what it removes with a container, are its own.
func TestIntegrationVolumeRoom(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	ctx := context.Background()
	const box, other, vol = "it-h11c-room", "it-h11c-room-other", "hbl-it-h11c-room_agent-data"
	image := "hermes-box-lite:test"
	measures := func(b string) []string {
		out, _ := exec.Command("docker", "ps", "-aq", "--filter", "label="+roomLabel+"="+b).Output()
		return strings.Fields(string(out))
	}
	cleanup := func() {
		for _, b := range []string{box, other} {
			for _, id := range measures(b) {
				_ = exec.Command("docker", "rm", "-f", "-v", id).Run()
			}
		}
		_ = exec.Command("docker", "volume", "rm", "-f", vol).Run()
	}
	cleanup()
	t.Cleanup(cleanup)
	dockerRun(t, "volume", "create", vol)
	// The same file system, by its ID, for a named local volume and an
	// anonymous one.
	named := strings.Fields(dockerRun(t, "run", "--rm", "--network", "none", "-v", vol+":/data", "--entrypoint", "stat", image, "-f", "-c", "%i %a %S", "/data"))
	anon := strings.Fields(dockerRun(t, "run", "--rm", "--network", "none", "-v", "/room", "--entrypoint", "stat", image, "-f", "-c", "%i", "/room"))
	if named[0] != anon[0] {
		t.Fatalf("a named volume is on file system %s, an anonymous one on %s", named[0], anon[0])
	}
	left := dockerRun(t, "create", "--label", oneOffLabel+"=1", "--label", roomLabel+"="+box, "--network", "none", "-v", "/room", "--entrypoint", "true", image)
	leftVolume := dockerRun(t, "inspect", "-f", "{{range .Mounts}}{{.Name}}{{end}}", left)
	fresh := dockerRun(t, "create", "--label", oneOffLabel+"=1", "--label", roomLabel+"="+other, "--network", "none", "--entrypoint", "true", image)
	since := time.Now()

	e, err := Connect(ctx, spec.Host{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	room, err := e.VolumeRoom(ctx, image, box)
	if err != nil {
		t.Fatal(err)
	}
	// The room of the file system before VolumeRoom, and after it: make
	// test's other parts write to the same disk meanwhile, so the
	// measure must fall between the two (give or take 256 MiB).
	statRoom := func(f []string) int64 {
		var blocks, size int64
		fmt.Sscanf(f[1]+" "+f[2], "%d %d", &blocks, &size)
		return blocks * size
	}
	after := strings.Fields(dockerRun(t, "run", "--rm", "--network", "none", "-v", vol+":/data", "--entrypoint", "stat", image, "-f", "-c", "%i %a %S", "/data"))
	lo, hi := min(statRoom(named), statRoom(after)), max(statRoom(named), statRoom(after))
	if room <= 0 || room < lo-(256<<20) || room > hi+(256<<20) {
		t.Errorf("VolumeRoom %d bytes; stat -f of a named volume %d before it, %d after", room, statRoom(named), statRoom(after))
	}
	if ids := measures(box); len(ids) != 0 {
		t.Errorf("measures of %s left: %v (the killed one was %s)", box, ids, left)
	}
	if out, _ := exec.Command("docker", "volume", "inspect", leftVolume).CombinedOutput(); !strings.Contains(strings.ToLower(string(out)), "no such volume") {
		t.Errorf("the killed measure's volume %s is still there: %s", leftVolume, out)
	}
	if ids := measures(other); len(ids) != 1 || !strings.HasPrefix(fresh, ids[0]) {
		t.Errorf("another box's measure, made just now: %v, want %s kept", ids, fresh)
	}
	// The volumes this measure's containers mounted are gone. Told by the
	// engine's events, not by the volumes listed before and after: other
	// tests make and remove boxes on the same engine meanwhile.
	made := measuresSince(t, since, box)
	if len(made) == 0 {
		t.Fatalf("the engine's events name no measure of %s", box)
	}
	mounted := volumesMountedBy(t, since, made)
	if len(mounted) == 0 {
		t.Fatalf("the engine's events name no volume the measures %v mounted", made)
	}
	for _, v := range mounted {
		if out, _ := exec.Command("docker", "volume", "inspect", v).CombinedOutput(); !strings.Contains(strings.ToLower(string(out)), "no such volume") {
			t.Errorf("the measure's volume %s is still there: %s", v, out)
			_ = exec.Command("docker", "volume", "rm", "-f", v).Run()
		}
	}
}

// measuresSince returns the IDs of the room measures of box the engine
// created since then, from its events.
func measuresSince(t *testing.T, since time.Time, box string) map[string]bool {
	t.Helper()
	out := dockerRun(t, "events", "--since", since.Format(time.RFC3339Nano), "--until", time.Now().Format(time.RFC3339Nano),
		"--filter", "type=container", "--filter", "event=create", "--filter", "label="+roomLabel+"="+box, "--format", "{{.Actor.ID}}")
	ids := map[string]bool{}
	for _, id := range strings.Fields(out) {
		ids[id] = true
	}
	return ids
}

// volumesMountedBy returns the volumes the engine's events say the
// containers mounted since then.
func volumesMountedBy(t *testing.T, since time.Time, containers map[string]bool) []string {
	t.Helper()
	out := dockerRun(t, "events", "--since", since.Format(time.RFC3339Nano), "--until", time.Now().Format(time.RFC3339Nano),
		"--filter", "type=volume", "--filter", "event=mount", "--format", `{{.Actor.ID}} {{index .Actor.Attributes "container"}}`)
	var vols []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && containers[f[1]] {
			vols = append(vols, f[0])
		}
	}
	return vols
}

// dockerRun runs the docker CLI and returns what it printed, trimmed; a
// failure ends the test.
func dockerRun(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// An exec whose context ends returns at once with the context's cause,
// whatever its command still does: a Ctrl-C, or a timeout around a command
// whose end the engine never reports. Real engine: the exec's output stream
// is the engine's, and only closing it ends the wait.
func TestIntegrationExecEndsWithItsContext(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	const name = "hbl-it-h21-exec-cancel"
	cleanup := func() { _ = exec.Command("docker", "rm", "-f", name).Run() }
	cleanup()
	t.Cleanup(cleanup)
	id := dockerRun(t, "run", "-d", "--name", name, "--network", "none", "--entrypoint", "sleep", "hermes-box-lite:test", "600")

	e, err := Connect(context.Background(), spec.Host{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	stop := errors.New("stopped by the test")
	ctx, cancel := context.WithTimeoutCause(context.Background(), 500*time.Millisecond, stop)
	defer cancel()
	start := time.Now()
	code, err := e.Run(ctx, id, "root", []string{"sleep", "300"}, nil, nil)
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("the exec returned %s after its context ended", took)
	}
	if !errors.Is(err, stop) || code != -1 {
		t.Errorf("exec after its context ended: code %d, %v; want -1 and the context's cause", code, err)
	}
	// A context that does not end leaves the exec to its end.
	var out strings.Builder
	if code, err := e.Run(context.Background(), id, "root", []string{"sh", "-c", "echo done; exit 3"}, &out, nil); code != 3 || err != nil || out.String() != "done\n" {
		t.Errorf("exec: code %d, %v, output %q", code, err, out.String())
	}
}

// ToolVersions' throwaway container is removed by the engine once it ends,
// so a boxes killed while it runs leaves none behind (such leftovers of
// killed commands were found after make test); its output and exit code
// are still read. Real engine: AutoRemove and the attach are the engine's.
func TestIntegrationToolVersionsLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	// Commands no other test runs in a throwaway container, to tell its
	// leftovers from those of tests running beside it.
	const failing, slow = "echo nope >&2; exit 33", "sleep 2.5"
	if os.Getenv(runOnceChild) != "" {
		// The process the test kills while its throwaway container runs.
		e, err := Connect(context.Background(), spec.Host{}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = e.runOnce(context.Background(), "hermes-box-lite:test", []string{"sh", "-c", slow})
		return
	}
	e, err := Connect(context.Background(), spec.Host{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	tools, err := e.ToolVersions(context.Background(), "hermes-box-lite:test")
	if err != nil || tools["tmux"] == "" {
		t.Fatalf("ToolVersions: %v, %v", tools, err)
	}
	if _, err := e.runOnce(context.Background(), "hermes-box-lite:test", []string{"sh", "-c", failing}); err == nil || !strings.Contains(err.Error(), "exited 33: nope") {
		t.Errorf("a failing command: %v", err)
	}
	child := exec.Command(os.Args[0], "-test.run=^TestIntegrationToolVersionsLeavesNothing$")
	child.Env = append(os.Environ(), runOnceChild+"=1")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	// Killed once its container runs: the engine's AutoRemove is what
	// removes it then. (Killed between the create and the start, it
	// leaves a container the next run sweeps: TestStaleOneOffsSwept.)
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(oneOffs(t, "status=running"), slow); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = child.Process.Kill()
			t.Fatal("the child's throwaway container never ran")
		}
	}
	_ = child.Process.Kill()
	_ = child.Wait()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		left := ""
		for _, line := range strings.Split(oneOffs(t), "\n") {
			if strings.Contains(line, failing) || strings.Contains(line, slow) {
				left += line + "\n"
			}
		}
		if left == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("throwaway containers left after their boxes was killed:\n%s", left)
		}
	}
}

// runOnceChild, set, makes TestIntegrationToolVersionsLeavesNothing the
// process it kills.
const runOnceChild = "BOXES_TEST_RUNONCE_CHILD"

// oneOffs lists the engine's throwaway containers, each with its command,
// in every state unless filters (docker ps --filter) say which.
func oneOffs(t *testing.T, filters ...string) string {
	args := []string{"ps", "-a", "--no-trunc", "--filter", "label=" + oneOffLabel, "--format", "{{.ID}} {{.Command}}"}
	for _, f := range filters {
		args = append(args, "--filter", f)
	}
	return dockerRun(t, args...)
}
