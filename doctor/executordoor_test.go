package doctor

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/engine"
)

// sidesRunner answers the door's probe script by container: the agent's
// and the executor's answers differ.
type sidesRunner struct {
	out   map[string]string // by container ID
	users map[string]string // the user each container's probes ran as
}

func (r *sidesRunner) Run(_ context.Context, container, user string, cmd []string, stdout, _ io.Writer) (int, error) {
	if len(cmd) == 3 && cmd[0] == "sh" && cmd[1] == "-c" {
		r.users[container] = user
		fmt.Fprint(stdout, r.out[container])
		return 0, nil
	}
	fmt.Fprint(stdout, `{"ok":true,"checks":[{"where":"box","name":"hb","ok":true,"severity":"ok","detail":"fine"}]}`)
	return 0, nil
}

// With the executor's door, doctor checks it from inside the executor as
// it checks the agent's from inside the agent, and finds the executor's
// port published by the gate; a direct way out of the executor fails it.
func TestCheckExecutorDoor(t *testing.T) {
	b := box("running")
	b.Resources.Containers[1].Image = b.Image
	// The gate publishes the executor's port.
	b.Resources.Containers[2].Ports = b.Resources.Containers[1].Ports
	b.Resources.Containers[1].Ports = nil
	b.Door = &Door{Egress: "open", Executor: &Door{Egress: "list", Allowed: "https://api.github.com/"}}
	agentOut := directNone + healthy + refusedPriv + refusedLink
	r := &sidesRunner{users: map[string]string{}, out: map[string]string{
		"a": agentOut,
		"x": directNoHost + healthy + refusedPriv + refusedLink + refusedOther + allowedAnswer,
	}}
	rep := Check(context.Background(), b, Probes{Runner: r, Initialize: gate})
	got := lines(rep)
	for _, want := range []string{
		"ok host executor port: published on 127.0.0.1:40000 by the gate, which relays it (the executor's door)",
		"ok box executor: no way around the gate:",
		"ok box executor: gate refuses private:",
		"ok box executor: gate refuses the rest:",
		"ok box executor: gate allows: https://api.github.com/ answers through the gate",
		"ok box no way around the gate:",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("doctor lacks %q:\n%s", want, got)
		}
	}
	if !rep.OK || r.users["a"] != "agent" || r.users["x"] != "" {
		t.Errorf("ok %v, probes run as %v:\n%s", rep.OK, r.users, got)
	}

	// An executor that reaches a machine directly fails doctor.
	r.out["x"] = "direct 172.30.0.1 7 connection refused\n" + healthy + refusedPriv + refusedLink + refusedOther + allowedAnswer
	rep = Check(context.Background(), b, Probes{Runner: r, Initialize: gate})
	if got := lines(rep); rep.OK || !strings.Contains(got, "error box executor: no way around the gate:") {
		t.Errorf("an executor with a way around its gate:\n%s", got)
	}

	// Without the executor's door, nothing is run in the executor.
	b = box("running")
	b.Door = &Door{Egress: "open"}
	r = &sidesRunner{users: map[string]string{}, out: map[string]string{"a": agentOut}}
	rep = Check(context.Background(), b, Probes{Runner: r, Initialize: gate})
	if _, ran := r.users["x"]; ran || strings.Contains(lines(rep), "executor: ") {
		t.Errorf("the executor probed without its door:\n%s", lines(rep))
	}
	// A stopped executor is not probed.
	b = box("running")
	b.Door = &Door{Egress: "open", Executor: &Door{Egress: "none"}}
	b.Resources.Containers[1].State = engine.Exited
	r = &sidesRunner{users: map[string]string{}, out: map[string]string{"a": agentOut}}
	Check(context.Background(), b, Probes{Runner: r, Initialize: gate})
	if _, ran := r.users["x"]; ran {
		t.Error("a stopped executor was probed")
	}
}
