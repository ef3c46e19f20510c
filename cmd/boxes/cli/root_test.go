package cli

import (
	"strings"
	"testing"
)

func TestHabitualSpellings(t *testing.T) {
	for in, want := range map[string]string{
		"plan -out p.plan":                   "plan --out p.plan",
		"plan -out=p.plan":                   "plan --out=p.plan",
		"logs alpha -f":                      "logs alpha --follow",
		"-f other.yaml logs alpha -f":        "-f other.yaml logs alpha --follow",
		"--file logs logs alpha -f":          "--file logs logs alpha --follow",
		"-f logs plan":                       "-f logs plan",
		"exec alpha -- tail -f log":          "exec alpha -- tail -f log",
		"exec logs -- tail -f log -out":      "exec logs -- tail -f log -out",
		"logs alpha -- -f":                   "logs alpha -- -f",
		"apply -f boxes.yaml --auto-approve": "apply -f boxes.yaml --auto-approve",
	} {
		if got := strings.Join(terraformFlags(strings.Fields(in)), " "); got != want {
			t.Errorf("%q became %q, want %q", in, got, want)
		}
	}
}
