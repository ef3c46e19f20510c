package docker

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/spec"
)

// A throwaway container that a killed command left mounting a box's volume
// (a restore's free-space check cut short) no longer stops the volume's
// removal: it is removed first. Real engine: the refusal worked around is
// the engine's own, to remove a volume a container still mounts.
func TestIntegrationRemoveVolumeLeftOneOff(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	ctx := context.Background()
	const vol = "hbl-it-h11c-oneoff_agent-data"
	image := "hermes-box-lite:test"
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("docker", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("docker %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	cleanup := func() {
		ids, _ := exec.Command("docker", "ps", "-aq", "--filter", "volume="+vol).Output()
		for _, id := range strings.Fields(string(ids)) {
			_ = exec.Command("docker", "rm", "-f", id).Run()
		}
		_ = exec.Command("docker", "volume", "rm", "-f", vol).Run()
	}
	cleanup()
	t.Cleanup(cleanup)
	run("volume", "create", vol)
	left := run("create", "--label", oneOffLabel+"=1", "--network", "none", "-v", vol+":/data", "--entrypoint", "true", image)

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
