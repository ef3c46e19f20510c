package conformance_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The suite is a test rig: the shipped boxes links none of it (nor the
// testing package it brings).
func TestShippedBinaryLinksNoSuite(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the binary's packages")
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/hermes-box/boxes/cmd/boxes").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "github.com/hermes-box/boxes/internal/conformance" {
			t.Errorf("the shipped boxes links %s", pkg)
		}
	}
}
