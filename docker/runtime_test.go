package docker

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/internal/hint"
)

// The engine's words for a runsc that cannot run a box get a hint saying
// what they mean; any other error is left as it is.
func TestExplainRuntime(t *testing.T) {
	// As Docker Engine 20.10 with Debian 12's runsc said it on a 6.x kernel.
	refused := errors.New(`Error response from daemon: OCI runtime start failed: starting container: setting up network: creating interfaces from net namespace "/proc/14799/ns/net": cannot run with network enabled in root network namespace: unknown`)
	err := explainRuntime(refused)
	if h := hint.Lines(err); len(h) != 1 || !strings.Contains(h[0], "newer runsc") || !strings.Contains(h[0], "runtime:") {
		t.Errorf("hints %q", h)
	}
	if err.Error() != refused.Error() || !errors.Is(err, refused) {
		t.Errorf("the engine's error is not kept as it was: %v", err)
	}
	other := fmt.Errorf("no such image")
	if got := explainRuntime(other); got != other || explainRuntime(nil) != nil {
		t.Errorf("explained %v", got)
	}
}

// A sandbox that died as it started (as every start of a runsc built with
// cgo does) gets a hint naming that build and how to see why.
func TestExplainRuntimeSandboxDied(t *testing.T) {
	// As Docker Engine 20.10 said it with gVisor's runsc built by go install
	// with cgo (gvisor.dev/gvisor v0.0.0-20260905035102-160fafc42237).
	died := errors.New(`Error response from daemon: failed to create shim task: OCI runtime create failed: creating container: cannot create sandbox: cannot read client sync file: waiting for sandbox to start: EOF: unknown`)
	err := explainRuntime(died)
	if h := hint.Lines(err); len(h) != 1 || !strings.Contains(h[0], "CGO_ENABLED=0") || !strings.Contains(h[0], "--debug-log") {
		t.Errorf("hints %q", h)
	}
	if err.Error() != died.Error() || !errors.Is(err, died) {
		t.Errorf("the engine's error is not kept as it was: %v", err)
	}
	// A sandbox that failed with its own words is not taken for one that died.
	other := errors.New(`Error response from daemon: OCI runtime create failed: creating container: cannot create sandbox: cannot read client sync file: waiting for sandbox to start: some other failure: unknown`)
	if got := explainRuntime(other); got != other {
		t.Errorf("explained %v", got)
	}
}

func TestRefusesStatx(t *testing.T) {
	// hb health's output under Debian 12's runsc (gVisor 2022-12-19).
	if !refusesStatx("stat: cannot statx '/data/home/agent': Invalid argument\nhb: error: /data/home/agent is missing or not agent's") {
		t.Error("statx refused not recognised")
	}
	for _, s := range []string{"hb: error: /data/home/agent is missing or not agent's", "stat: cannot statx '/data': No such file or directory"} {
		if refusesStatx(s) {
			t.Errorf("%q taken for a refused statx", s)
		}
	}
}

// A container that stopped on its own start's refused statx (its log lines
// say so) gets the same hint as a check that met it; others are left as
// they are.
func TestExplainDown(t *testing.T) {
	down := fmt.Errorf("agent of it-a: %w", &downError{state: "restarting (exit 1)", logs: "stat: cannot statx '/data/home/agent': Invalid argument | hb: error: /data/home/agent is missing or not agent's"})
	err := explainDown(down)
	if h := hint.Lines(err); len(h) != 1 || !strings.Contains(h[0], "newer runsc") {
		t.Errorf("hints %q", h)
	}
	var de *downError
	if err.Error() != down.Error() || !errors.As(err, &de) {
		t.Errorf("the container's error is not kept as it was: %v", err)
	}
	other := fmt.Errorf("agent of it-a: %w", &downError{state: "exited (exit 1)", logs: "hb: error: this image has no user agent"})
	if got := explainDown(other); got != other {
		t.Errorf("explained %v", got)
	}
}
