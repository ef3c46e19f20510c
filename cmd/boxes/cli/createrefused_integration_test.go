package cli

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/statedir"
)

// onLine is output that runs fn once, synchronously, when a line
// containing marker is written: between a progress step and what follows it.
type onLine struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	fn     func()
	done   bool
}

func (o *onLine) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n, err := o.buf.Write(p)
	if !o.done && strings.Contains(o.buf.String(), o.marker) {
		o.done = true
		o.fn()
	}
	return n, err
}

// TestIntegrationCreateRefused: a create whose containers the engine
// refuses leaves nothing behind. The plan checks what it can (names taken
// by resources boxes does not manage, runtimes, CPUs, memory), so the
// refusal here is one no plan can foresee: another program takes the
// agent container's name after the plan, just before the create. Compose
// makes the network and volumes before the engine refuses the container;
// apply removes what it made, with the token, says so, leaves the other
// program's container alone, and the next plan is a plain create. Real
// engine: compose's order, the engine's refusal, and that what compose
// made carries the labels the undo finds it by.
func TestIntegrationCreateRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image := testImage(t, "BOXES_TEST_IMAGE", "hermes-box-lite:test")
	const box = "it-crf"
	removeWithOneOffs(box)
	t.Cleanup(func() { removeWithOneOffs(box) })
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nfleet: it-crf\nboxes:\n  "+box+": {}\n")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}

	var other string
	t.Cleanup(func() {
		if other != "" {
			_ = exec.Command("docker", "rm", "-f", other).Run()
		}
	})
	output := &onLine{marker: box + ": creating network, volumes and containers", fn: func() {
		out, err := exec.Command("docker", "create", "--name", compose.ContainerName(box, compose.AgentService), image, "true").Output()
		if err != nil {
			t.Errorf("taking the agent's name: %v", err)
		}
		other = strings.TrimSpace(string(out))
	}}
	// apply's progress and its errors, in the order written.
	code := MainContext(context.Background(), Streams{In: strings.NewReader(""), Out: output, Err: output}, []string{"-f", filepath.Join(dir, "boxes.yaml"), "apply", "--auto-approve"})
	got := output.buf.String()
	if code == 0 {
		t.Fatalf("apply with the agent's name taken: exit 0\n%s", got)
	}
	t.Logf("apply:\n%s", got)
	for _, want := range []string{"is already in use", "what the create made was removed (", "nothing else was touched"} {
		if !strings.Contains(got, want) {
			t.Errorf("apply's error lacks %q:\n%s", want, got)
		}
	}
	if c, v, n := labelled(t, box); c+v+n != 0 {
		t.Errorf("%s keeps %d containers, %d volumes, %d networks", box, c, v, n)
	}
	if _, ok, _ := statedir.Beside(filepath.Join(dir, "boxes.yaml")).Tokens().Get(box); ok {
		t.Error("the token is left")
	}
	if other == "" || dockerOut(t, "inspect", "-f", "{{.Id}}", other) != other {
		t.Errorf("the other program's container %q is gone", other)
	}
	dockerOut(t, "rm", "-f", other)
	if p := boxes(t, dir, "plan"); p.code != 0 || !strings.Contains(p.stdout, "1 to create") || !strings.Contains(p.stdout, "box is declared and has no resources") {
		t.Errorf("plan after the refused create: %+v", p)
	}
}
