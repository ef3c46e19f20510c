package reconcile_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The planner is pure: it links no engine SDK. A Docker or Kubernetes
// client here would come in through some small helper, and would cost every
// command its initialisation. (compose-go's types bring two small Docker
// modules of plain types, units and ports: not a client.)
func TestPlannerLinksNoEngine(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the planner's packages")
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/hermes-box/boxes/reconcile").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/docker/docker/", "github.com/docker/cli/", "github.com/docker/compose/", "github.com/moby/", "k8s.io/", "sigs.k8s.io/"} {
			if strings.HasPrefix(pkg, banned) {
				t.Errorf("the planner links %s", pkg)
			}
		}
	}
}
