//go:build linux

package cli

import (
	"os"
	"testing"

	"github.com/hermes-box/boxes/internal/testpty"
)

// /dev/null is a character device but not a terminal: a command whose
// streams go there asks nothing and draws no live progress or colour.
func TestStreamsTerminalOnlyForATerminal(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if streamsOf(null, null, null).IsTTY {
		t.Errorf("%s counts as a terminal", os.DevNull)
	}
	_, tty := testpty.Open(t)
	if !streamsOf(tty, tty, tty).IsTTY {
		t.Error("a pseudo-terminal does not count as a terminal")
	}
	if streamsOf(tty, null, null).IsTTY {
		t.Errorf("a terminal's input with output to %s counts as a terminal", os.DevNull)
	}
}
