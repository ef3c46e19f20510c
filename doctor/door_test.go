package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/hb"
)

// doorRunner answers the door's probe script with out (and code, err), and
// hb doctor with a healthy report; it records how the probes were run.
type doorRunner struct {
	out  string
	code int
	err  error

	script, container, user string
}

func (r *doorRunner) Run(_ context.Context, container, user string, cmd []string, stdout, stderr io.Writer) (int, error) {
	if len(cmd) == 3 && cmd[0] == "sh" && cmd[1] == "-c" {
		r.script, r.container, r.user = cmd[2], container, user
		fmt.Fprint(stdout, r.out)
		if r.code != 0 {
			fmt.Fprint(stderr, "sh: curl: not found\n")
		}
		return r.code, r.err
	}
	fmt.Fprint(stdout, `{"ok":true,"checks":[]}`)
	return 0, nil
}

func doorLines(checks []hb.Check) string {
	var b strings.Builder
	for _, c := range checks {
		fmt.Fprintf(&b, "%s %s %s: %s\n", c.Severity, c.Where, c.Name, c.Detail)
	}
	return b.String()
}

// What curl prints, per probe, on a box whose door holds: the agent's
// default route leads to no machine, the gate answers its health route and
// refuses (407) what the rules close.
const (
	directNone    = "direct none\n"
	directNoHost  = "direct 172.30.0.1 28 curl: (28) Failed to connect to 172.30.0.1 port 9 after 4002 ms: Timeout was reached\n"
	healthy       = "health 200 000 0\n"
	refusedPriv   = "private 407 000 0\n"
	refusedLink   = "linklocal 407 000 0\n"
	refusedOther  = "other 407 000 0\n"
	allowedAnswer = "allowed 200 000 0\n"
)

func TestCheckDoorReadsTheProbes(t *testing.T) {
	list := Door{Egress: "list", Allowed: "http://api.example.com/"}
	cluster := Door{Egress: "open", Cluster: true, ControlPlane: "https://10.247.0.1:6443"}
	for _, c := range []struct {
		name string
		door Door
		out  string
		want string
	}{
		{"open, all well", Door{Egress: "open"}, directNone + healthy + refusedPriv + refusedLink, `ok box no way around the gate: a direct connection (curl --noproxy, raw TCP, UDP) finds no machine to leave by
ok box gate answers: the gate answers on gate:3129
ok box gate refuses private: the gate refuses a private address (10.255.255.1)
ok box gate refuses linklocal: the gate refuses a link-local address, where cloud metadata lives (169.254.0.1)
`},
		{"a list, all well, a route to no machine", list, directNoHost + healthy + refusedPriv + refusedLink + refusedOther + allowedAnswer, `ok box no way around the gate: a direct connection (curl --noproxy, raw TCP, UDP) finds no machine to leave by
ok box gate answers: the gate answers on gate:3129
ok box gate refuses private: the gate refuses a private address (10.255.255.1)
ok box gate refuses linklocal: the gate refuses a link-local address, where cloud metadata lives (169.254.0.1)
ok box gate refuses the rest: the gate refuses a destination egress: does not list
ok box gate allows: http://api.example.com/ answers through the gate
`},
		{"a direct connection answered", Door{Egress: "open"}, "direct 172.17.0.1 0\n" + healthy + refusedPriv + refusedLink,
			"error box no way around the gate: a direct connection from the agent reached a machine (172.17.0.1 0): traffic can bypass the gate (boxes apply remakes the box on its inside network)\n"},
		{"a direct connection refused by a machine", Door{Egress: "open"}, "direct 172.17.0.1 7 curl: (7) Failed to connect to 172.17.0.1 port 9 after 0 ms: Connection refused\n" + healthy + refusedPriv + refusedLink,
			"error box no way around the gate: a direct connection from the agent reached a machine (172.17.0.1 7 curl: (7) Failed to connect to 172.17.0.1 port 9 after 0 ms: Connection refused): traffic can bypass the gate (boxes apply remakes the box on its inside network)\n"},
		{"no direct probe output", Door{Egress: "open"}, healthy + refusedPriv + refusedLink,
			"error box no way around the gate: a direct connection from the agent reached a machine (): traffic can bypass the gate (boxes apply remakes the box on its inside network)\n"},
		{"the gate does not answer", Door{Egress: "open"}, directNone + "health 000 000 7\n" + refusedPriv + refusedLink,
			"error box gate answers: the gate does not answer from the agent (000 000 7): boxes logs NAME gate\n"},
		{"the gate's name does not resolve", Door{Egress: "open"}, directNone + "health 000 000 6\ngatenet - - 0.000000\n" + refusedPriv + refusedLink,
			"error box gate answers: the gate does not answer from the agent (000 000 6); the name gate does not resolve there (the engine's DNS for the box's network): boxes logs NAME gate\n"},
		{"the gate is not on the box's network", Door{Egress: "open"}, directNone + "health 000 000 28\ngatenet 172.20.0.3 0x0 0.000000\n" + refusedPriv + refusedLink,
			"error box gate answers: the gate does not answer from the agent (000 000 28); nothing on the box's network answers for the gate's address 172.20.0.3 (no neighbour entry): the gate is not on that network: boxes logs NAME gate\n"},
		{"a firewall drops what the agent sends the gate", Door{Egress: "open"}, directNone + "health 000 000 28\ngatenet 172.20.0.3 0x2 0\n" + refusedPriv + refusedLink,
			"error box gate answers: the gate does not answer from the agent (000 000 28); the gate's address 172.20.0.3 had answered on the box's network (the agent holds its MAC address), but the connection got no answer: something drops traffic inside the box's network (a firewall on the engine's machine: iptables FORWARD), or the gate left it: boxes logs NAME gate\n"},
		{"the gate is stuck", Door{Egress: "open"}, directNone + "health 000 000 28\ngatenet 172.20.0.3 0x2 0.000211\n" + refusedPriv + refusedLink,
			"error box gate answers: the gate does not answer from the agent (000 000 28); the connection to 172.20.0.3 was made, but the gate did not answer within 8 s: it is stuck (paused, or starved of CPU): boxes logs NAME gate\n"},
		{"the gate refuses its port", Door{Egress: "open"}, directNone + "health 000 000 7\ngatenet 172.20.0.3 0x2 0.000000\n" + refusedPriv + refusedLink,
			"error box gate answers: the gate does not answer from the agent (000 000 7); its address is 172.20.0.3: boxes logs NAME gate\n"},
		{"on a cluster, the node rejects and the API server is closed", cluster, "direct 10.247.1.1 7 connection refused\ncontrolplane 000 7\n" + healthy + refusedPriv + refusedLink,
			"ok box no way around the gate: a direct connection (curl --noproxy) reaches neither the node nor the cluster's API server\n"},
		{"on a cluster, nothing answers", cluster, "direct 10.247.1.1 28 timed out\ncontrolplane 000 28\n" + healthy + refusedPriv + refusedLink,
			"ok box no way around the gate: a direct connection (curl --noproxy) reaches neither the node nor the cluster's API server\n"},
		{"on a cluster, the API server answers", cluster, "direct 10.247.1.1 7 connection refused\ncontrolplane 403 0\n" + healthy + refusedPriv + refusedLink,
			"error box no way around the gate: a direct connection from the agent reached a machine (10.247.1.1 7 connection refused; the API server https://10.247.0.1:6443: 403 0): traffic can bypass the gate (the cluster does not enforce the box's NetworkPolicies: boxes apply puts them back, and the cluster's network must enforce them)\n"},
		{"on a cluster, a TLS failure after the connection", cluster, "direct 10.247.1.1 7 connection refused\ncontrolplane 000 35\n" + healthy + refusedPriv + refusedLink,
			"error box no way around the gate: a direct connection from the agent reached a machine (10.247.1.1 7 connection refused; the API server https://10.247.0.1:6443: 000 35)"},
		{"on a cluster, the node answers", cluster, "direct 10.247.1.1 0\ncontrolplane 000 7\n" + healthy + refusedPriv + refusedLink,
			"error box no way around the gate: a direct connection from the agent reached a machine (10.247.1.1 0; the API server"},
		{"on a cluster, the control plane's probe did not run", cluster, "direct 10.247.1.1 7 connection refused\n" + healthy + refusedPriv + refusedLink,
			"error box no way around the gate: a direct connection from the agent reached a machine (10.247.1.1 7 connection refused; the API server https://10.247.0.1:6443: )"},
		{"a private address answered", Door{Egress: "open"}, directNone + healthy + "private 200 000 0\n" + refusedLink,
			"error box gate refuses private: a private address (10.255.255.1) was not refused by the gate (200 000 0)\n"},
		{"a link-local address answered", Door{Egress: "open"}, directNone + healthy + refusedPriv + "linklocal 200 000 0\n",
			"error box gate refuses linklocal: a link-local address, where cloud metadata lives (169.254.0.1) was not refused by the gate (200 000 0)\n"},
		{"a private address refused on its CONNECT", Door{Egress: "open"}, directNone + healthy + "private 000 407 56\n" + refusedLink,
			"ok box gate refuses private: the gate refuses a private address (10.255.255.1)\n"},
		{"a private address timed out, not refused", Door{Egress: "open"}, directNone + healthy + "private 000 000 28\n" + refusedLink,
			"error box gate refuses private: a private address (10.255.255.1) was not refused by the gate (000 000 28)\n"},
		{"the rest let through", list, directNone + healthy + refusedPriv + refusedLink + "other 502 000 0\n" + allowedAnswer,
			"error box gate refuses the rest: a destination egress: does not list was not refused (502 000 0)\n"},
		{"the allowed destination refused", list, directNone + healthy + refusedPriv + refusedLink + refusedOther + "allowed 407 000 0\n",
			"error box gate allows: the gate refuses http://api.example.com/, which egress: allows (boxes egress NAME shows why)\n"},
		{"the allowed destination silent", list, directNone + healthy + refusedPriv + refusedLink + refusedOther + "allowed 000 000 28\n",
			"warn box gate allows: the gate let http://api.example.com/ through, but it did not answer (000 000 28)\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &doorRunner{out: c.out}
			checks := checkDoor(context.Background(), r, "agent-id", c.door)
			got := doorLines(checks)
			for _, line := range strings.SplitAfter(c.want, "\n") {
				if line != "" && !strings.Contains(got, line) {
					t.Errorf("lacks %q in\n%s", line, got)
				}
			}
			// Every check the case does not name as a problem passes.
			for _, ch := range checks {
				if ch.Severity != "ok" && !strings.Contains(c.want, ch.Name+":") {
					t.Errorf("unexpected %s %s: %s", ch.Severity, ch.Name, ch.Detail)
				}
				if (ch.Severity == "error") == ch.OK {
					t.Errorf("%s: severity %s with OK %v", ch.Name, ch.Severity, ch.OK)
				}
			}
			if r.container != "agent-id" || r.user != hb.AgentUser {
				t.Errorf("probes ran in %q as %q, want the agent's container as %s", r.container, r.user, hb.AgentUser)
			}
		})
	}
}

// The script asks what the door's mode needs: the rest only for a closed
// egress, the allowed destination only when there is one; the health route
// bypasses the proxy, the refusal probes go through it.
func TestDoorProbesFollowTheMode(t *testing.T) {
	open := doorProbes(Door{Egress: "open"})
	list := doorProbes(Door{Egress: "list", Allowed: "http://api.example.com/"})
	none := doorProbes(Door{Egress: "none"})
	for _, s := range []string{open, list, none} {
		for _, want := range []string{"/proc/net/route", "echo \"health ", "--noproxy '*' -o /dev/null -w '%{http_code} %{http_connect} %{time_connect}' 'http://gate:3129/_health'", "/proc/net/arp",
			"echo \"private ", "'http://10.255.255.1/'", "echo \"linklocal ", "'http://169.254.0.1/'"} {
			if !strings.Contains(s, want) {
				t.Errorf("script lacks %q:\n%s", want, s)
			}
		}
		for _, probe := range []string{"10.255.255.1", "169.254.0.1"} {
			for _, line := range strings.Split(s, "\n") {
				if strings.Contains(line, probe) && strings.Contains(line, "--noproxy") {
					t.Errorf("the probe of %s bypasses the gate: %s", probe, line)
				}
			}
		}
	}
	if strings.Contains(open, "echo \"other ") || strings.Contains(open, "echo \"allowed ") {
		t.Errorf("an open egress probes the rest or an allowed destination:\n%s", open)
	}
	if !strings.Contains(none, "echo \"other ") || strings.Contains(none, "echo \"allowed ") {
		t.Errorf("egress: none probes:\n%s", none)
	}
	if !strings.Contains(list, "echo \"other ") || !strings.Contains(list, "'http://api.example.com/'") {
		t.Errorf("a list probes:\n%s", list)
	}
}

// Probes that cannot run are one failed check, saying why.
func TestCheckDoorProbesFail(t *testing.T) {
	for _, r := range []*doorRunner{{code: 127}, {err: errors.New("container not running")}} {
		checks := checkDoor(context.Background(), r, "agent-id", Door{Egress: "open"})
		if len(checks) != 1 || checks[0].OK || checks[0].Severity != "error" || checks[0].Name != "network door" ||
			!strings.Contains(checks[0].Detail, "the probes could not run") {
			t.Errorf("runner %+v: %+v", r, checks)
		}
	}
}

// Check runs the door's probes in the agent after hb doctor when the box
// has a door and a gate; a box without its gate says so and skips them.
func TestCheckRunsTheDoorWithAGate(t *testing.T) {
	b := box("running")
	b.Door = &Door{Egress: "open"}
	r := &doorRunner{out: directNone + healthy + refusedPriv + refusedLink}
	rep := Check(context.Background(), b, Probes{Runner: r, Initialize: gate})
	got := lines(rep)
	if r.container != "a" || !strings.Contains(got, "ok box gate refuses linklocal:") {
		t.Errorf("the door was not checked in the agent (%q):\n%s", r.container, got)
	}

	b.Resources.Containers = b.Resources.Containers[:2] // no gate
	r = &doorRunner{out: directNone + healthy + refusedPriv + refusedLink}
	rep = Check(context.Background(), b, Probes{Runner: r, Initialize: gate})
	got = lines(rep)
	if !strings.Contains(got, "error host gate container: missing (boxes apply recreates it)\n") || rep.OK {
		t.Errorf("a box without its gate:\n%s", got)
	}
	if r.script != "" || strings.Contains(got, "gate answers") {
		t.Errorf("the door was probed without a gate:\n%s", got)
	}
}

// A gate that stopped while the box runs is an error of its own.
func TestCheckFindsAStoppedGate(t *testing.T) {
	b := box("running")
	b.Resources.Containers[2].State = "exited"
	rep := Check(context.Background(), b, Probes{Runner: hbDoctor{`{"ok":true,"checks":[]}`}, Initialize: gate})
	if !strings.Contains(lines(rep), "error host gate container: exited (boxes start alpha)\n") || rep.OK {
		t.Errorf("a stopped gate:\n%s", lines(rep))
	}
}

// The gate must close every public address the engine's machine has now:
// one the machine gained after the gate was made fails doctor until apply
// remakes the gate; a gate that does not record what it closes is unknown
// (a warning), never reported closed.
func TestCheckMachineAddresses(t *testing.T) {
	for _, c := range []struct {
		name    string
		labels  map[string]string
		machine []string
		want    string
		ok      bool
	}{
		{"closed", map[string]string{compose.ClosedLabel: "192.0.2.10/32"}, []string{"192.0.2.10/32"},
			"ok host gate closes the machine: the gate closes the engine's machine at 192.0.2.10\n", true},
		{"no public address", map[string]string{compose.ClosedLabel: ""}, nil,
			"ok host gate closes the machine: the engine's machine has no public address (its private ones are closed with the private ranges)\n", true},
		{"gained", map[string]string{compose.ClosedLabel: "192.0.2.10/32"}, []string{"192.0.2.10/32", "198.51.100.77/32"},
			"error host gate closes the machine: the engine's machine has address 198.51.100.77, which the gate does not close: the agent can reach the machine there (boxes apply remakes the gate to close it)\n", false},
		{"gained two", map[string]string{compose.ClosedLabel: ""}, []string{"192.0.2.10/32", "198.51.100.77/32"},
			"error host gate closes the machine: the engine's machine has addresses 192.0.2.10, 198.51.100.77, which the gate does not close", false},
		{"unrecorded", map[string]string{}, []string{"198.51.100.77/32"},
			"warn host gate closes the machine: unknown: the gate was made by an earlier boxes and does not record which addresses of the engine's machine it closes (boxes apply remakes it to record them)\n", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := box("running")
			b.Resources.Containers[2].Labels = c.labels
			b.Door = &Door{Egress: "open", Machine: c.machine}
			rep := Check(context.Background(), b, Probes{Runner: &doorRunner{out: directNone + healthy + refusedPriv + refusedLink}, Initialize: gate})
			var machine []hb.Check
			for _, ch := range rep.Checks {
				if ch.Name == "gate closes the machine" {
					machine = append(machine, ch)
				}
			}
			if got := lines(rep); !strings.Contains(got, c.want) || len(machine) != 1 || machine[0].OK != c.ok || (!c.ok && rep.OK) {
				t.Errorf("report ok %v:\n%s\nwant one machine check, ok %v: %q", rep.OK, got, c.ok, c.want)
			}
		})
	}
}

// TestDoorProbesControlPlane: the probes try the control plane only when
// the door names one, directly (not through the gate).
func TestDoorProbesControlPlane(t *testing.T) {
	if s := doorProbes(Door{Egress: "open"}); strings.Contains(s, "controlplane") {
		t.Errorf("a door with no control plane probes one:\n%s", s)
	}
	s := doorProbes(Door{Egress: "open", Cluster: true, ControlPlane: "https://10.247.0.1:6443"})
	if !strings.Contains(s, `controlplane $(curl -sk -m 2 --noproxy '*' -o /dev/null -w '%{http_code}' 'https://10.247.0.1:6443'`) {
		t.Errorf("the control plane's probe is not in the script:\n%s", s)
	}
}
