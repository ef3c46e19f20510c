package progress

import (
	"bytes"
	"errors"
	"regexp"
	"testing"
)

func TestBoxesLines(t *testing.T) {
	var b bytes.Buffer
	p := NewBoxes(&b, false, []string{"alpha", "beta"}, []string{"create", "stop"})
	p.Step("alpha", "starting")
	p.Done("beta", errors.New("boom"))
	p.Done("alpha", nil)
	want := regexp.MustCompile(`^\n\S+Z alpha: starting\n\S+Z beta: failed: boom\n\S+Z alpha: done\n$`)
	if !want.MatchString(b.String()) {
		t.Errorf("lines %q", b.String())
	}
}

// On a terminal every box keeps its own line, redrawn in place.
func TestBoxesRedraw(t *testing.T) {
	var b bytes.Buffer
	p := NewBoxes(&b, true, []string{"alpha", "beta"}, []string{"create", "stop"})
	p.Step("beta", "stopping")
	p.Done("alpha", nil)
	want := "\n" +
		"\x1b[2Kalpha        create: waiting\n\x1b[2Kbeta         stopping\n" +
		"\x1b[2A\x1b[2Kalpha        done\n\x1b[2Kbeta         stopping\n"
	if b.String() != want {
		t.Errorf("screen %q, want %q", b.String(), want)
	}
}
