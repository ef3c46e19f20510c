package pool_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The lease protocol's rules are pure: they link no engine SDK, and none
// of the workflows that do its I/O (workspace) nor the engines (docker).
func TestProtocolLinksNoEngine(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the protocol's packages")
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/hermes-box/boxes/pool").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	banned := []string{"github.com/docker/docker/", "github.com/docker/cli/", "github.com/docker/compose/", "github.com/moby/", "k8s.io/", "sigs.k8s.io/"}
	for _, pkg := range strings.Fields(string(out)) {
		for _, b := range banned {
			if strings.HasPrefix(pkg, b) {
				t.Errorf("the lease protocol links %s", pkg)
			}
		}
		switch pkg {
		case "github.com/hermes-box/boxes/workspace", "github.com/hermes-box/boxes/docker", "github.com/hermes-box/boxes/statedir":
			t.Errorf("the lease protocol links %s", pkg)
		}
	}
}
