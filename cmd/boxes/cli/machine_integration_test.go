package cli

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/internal/testhost"
)

// TestIntegrationMachineAddress: an address this machine gains after a
// box's gate was made reaches the machine from the agent until the gate is
// remade. The plan says so and remakes the gate alone, doctor fails and
// egress reports the box exposed meanwhile; after apply the gate refuses
// it and doctor passes. Real engine: whether a container on the box's
// networks reaches an address the engine's machine holds.
func TestIntegrationMachineAddress(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image := testImage(t, "BOXES_TEST_IMAGE", "hermes-box-lite:test")
	const box, added = "it-machine", "198.51.100.77"
	removeBoxes(box)
	t.Cleanup(func() { removeBoxes(box) })
	lan := testhost.LAN(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nfleet: it-machine\nboxes:\n  "+box+": {}\n")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	agent := compose.ContainerName(box, compose.AgentService)
	machine := fmt.Sprintf("http://%s:%d/", added, lan)
	get := func() string {
		out, _ := exec.Command("docker", "exec", agent, "curl", "-sS", "-m", "5", machine).CombinedOutput()
		return strings.TrimSpace(string(out))
	}
	egressMachine := func() egressMachine {
		t.Helper()
		r := boxes(t, dir, "egress", box, "--json")
		var report egressReport
		if err := json.Unmarshal([]byte(r.stdout), &report); err != nil || r.code != 0 {
			t.Fatalf("egress --json: %v %+v", err, r)
		}
		return report.Machine
	}

	testhost.MachineAddress(t, added)
	if got := get(); !strings.Contains(got, "hello from the engine's machine") {
		t.Fatalf("the agent did not reach the machine at its new address before apply (%q): the test proves nothing here", got)
	}
	p := boxes(t, dir, "plan")
	for _, want := range []string{"the engine's machine has a new address " + added + ": the gate must close it", "the agent keeps running"} {
		if !strings.Contains(p.stdout, want) {
			t.Errorf("plan lacks %q:\n%s%s", want, p.stdout, p.stderr)
		}
	}
	doc := boxes(t, dir, "doctor", box)
	if want := "the engine's machine has address " + added + ", which the gate does not close"; doc.code != 1 || !strings.Contains(doc.stdout, want) {
		t.Errorf("doctor of an exposed box: exit %d, want 1 and %q:\n%s%s", doc.code, want, doc.stdout, doc.stderr)
	}
	if m := egressMachine(); m.Status != "exposed" || strings.Join(m.Exposed, " ") != added+"/32" {
		t.Errorf("egress --json machine %+v, want %s exposed", m, added)
	}

	before := dockerOut(t, "inspect", "-f", "{{.Id}} {{.State.StartedAt}}", agent)
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	if after := dockerOut(t, "inspect", "-f", "{{.Id}} {{.State.StartedAt}}", agent); after != before {
		t.Errorf("the agent was remade or restarted to close an address: %s, then %s", before, after)
	}
	if got := get(); strings.Contains(got, "hello from") || got == "" {
		t.Errorf("the agent reaches the machine at %s after apply: %q", added, got)
	}
	if doc := boxes(t, dir, "doctor", box); doc.code != 0 || !strings.Contains(doc.stdout, "gate closes the machine") {
		t.Errorf("doctor after apply: exit %d\n%s%s", doc.code, doc.stdout, doc.stderr)
	}
	if m := egressMachine(); m.Status != "closed" || len(m.Exposed) != 0 {
		t.Errorf("egress --json machine %+v after apply, want closed", m)
	}
}
