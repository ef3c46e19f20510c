package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/fakeengine"
	"github.com/hermes-box/boxes/spec"
)

// egress --check answers with the box's engine down: the engine's machine's
// addresses come from the host's address, and no engine is reached.
func TestEgressCheckReachesNoEngine(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), `version: 1
hosts:
  nexus: {docker: "ssh://me@198.51.100.9"}
boxes:
  delta: {host: nexus}
`)
	conn := &fakeengine.Connector{Path: filepath.Join(dir, "engines.json"), Down: map[string]bool{"nexus": true}}
	c := Connectors{spec.HostDocker: func() engine.Connector { return conn }}
	t.Setenv("DOCKER_HOST", "unix://"+dir+"/no-docker.sock")

	r := boxesWith(t, c, dir, "egress", "delta", "--check", "https://198.51.100.9/")
	if r.code != 1 || !strings.HasPrefix(r.stdout, "refused: https://198.51.100.9/ (closed): 198.51.100.9 is an address of the engine machine") {
		t.Errorf("the engine machine's address: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = boxesWith(t, c, dir, "egress", "delta", "--check", "https://198.51.100.10/")
	if r.code != 0 || r.stdout != "allowed: https://198.51.100.10/ by egress: open (the default)\n" {
		t.Errorf("another address: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if calls := conn.Calls()["nexus"]; len(calls) != 0 {
		t.Errorf("egress --check called the engine: %v", calls)
	}
	// Without --check, egress reads the gate's refusals: the engine is needed.
	if r := boxesWith(t, c, dir, "egress", "delta"); r.code != 1 || !strings.Contains(r.stderr, "connection refused") {
		t.Errorf("egress with the engine down: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
