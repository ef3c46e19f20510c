package cli

import (
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
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

// Every command's --help says what it does, what it takes and, where it
// helps, an example: a Long text, not only the one line of Short.
func TestEveryCommandHasLongHelp(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		long := strings.TrimSpace(c.Long)
		if long == "" || long == strings.TrimSpace(c.Short) {
			t.Errorf("%q has no help beyond its one line", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot(&Env{Streams: Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}}))
}
