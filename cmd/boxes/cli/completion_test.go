package cli

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCompletion: box and host names come from boxes.yaml, even one that does
// not validate, and each argument completes what its command takes.
func TestCompletion(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nboxes:\n  beta: {host: nexus}\n  alpha: {memory: lots}\nhosts:\n  nexus: {docker: ssh://me@nexus}\n")
	for args, want := range map[string]string{
		"stop ":                   "alpha beta",
		"enter a":                 "alpha beta", // the shell filters by prefix
		"logs alpha ":             "agent executor gate",
		"egress ":                 "alpha beta",
		"egress alpha ":           "",
		"logs alpha x ":           "",
		"plan --target ":          "alpha beta",
		"apply --confirm-delete ": "alpha beta",
		"load f.tar.age ":         "alpha beta",
		"completion ":             "bash zsh fish",
	} {
		words := strings.Split(args, " ")
		r := boxes(t, dir, append([]string{"__complete"}, words...)...)
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			if line != "" && !strings.HasPrefix(line, ":") {
				got = append(got, line)
			}
		}
		if strings.Join(got, " ") != want {
			t.Errorf("completing %q: %q, want %q (%+v)", args, strings.Join(got, " "), want, r)
		}
	}
	// boxes gate runs inside a box's gate container: it is not offered.
	r := boxes(t, dir, "__completeNoDesc", "")
	commands := strings.Fields(r.stdout)
	if !slices.Contains(commands, "egress") || slices.Contains(commands, "gate") {
		t.Errorf("completing a command: %q, want egress and no gate", commands)
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		if r := boxes(t, dir, "completion", shell); r.code != 0 || !strings.Contains(r.stdout, "boxes") {
			t.Errorf("completion %s: %+v", shell, r)
		}
	}
	if r := boxes(t, dir, "completion", "tcsh"); r.code != 1 || !strings.Contains(r.stderr, "bash, zsh and fish") {
		t.Errorf("completion tcsh: %+v", r)
	}
}
