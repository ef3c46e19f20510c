package doctor

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/hb"
)

// Door is what doctor needs to check a box's network door from inside its
// agent: the egress mode and, for a list, one destination it allows.
type Door struct {
	// Egress is "open", "none" or "list".
	Egress string
	// Allowed is a URL of a destination the list allows, tried through the
	// gate; "" tries none.
	Allowed string
	// Machine are the public addresses of the engine's machine now, as
	// CIDRs (compose.MachineAddresses): the gate must close every one.
	Machine []string
	// Cluster: the box is on a cluster, where the names gate and executor
	// are their Services' addresses, which the cluster's Service routing
	// carries to their pods.
	Cluster bool
	// ControlPlane is the address of the engine's control plane (a
	// cluster's API server), which listens: an agent that can connect to
	// it directly has a way around its gate. "" tries none.
	ControlPlane string
	// Executor is the executor's door, checked from inside the executor
	// as the agent's is from inside the agent (its Machine unused); nil
	// when the executor has none.
	Executor *Door
}

// checkMachine compares the addresses of the engine's machine the gate
// closes, as its labels say, with the machine's now: one it leaves open
// (the machine gained it after the gate was made) is an error until apply
// remakes the gate; a gate that does not say is unknown, not closed.
func checkMachine(rep *Report, gate engine.Container, d Door) {
	const name = "gate closes the machine"
	open, _, known := compose.MachineClosed(gate.Labels, d.Machine)
	switch {
	case !known:
		rep.add("host", name, "warn", "unknown: the gate was made by an earlier boxes and does not record which addresses of the engine's machine it closes (boxes apply remakes it to record them)")
	case len(open) == 1:
		rep.add("host", name, "error", "the engine's machine has address %s, which the gate does not close: the agent can reach the machine there (boxes apply remakes the gate to close it)", compose.Addresses(open))
	case len(open) > 1:
		rep.add("host", name, "error", "the engine's machine has addresses %s, which the gate does not close: the agent can reach the machine there (boxes apply remakes the gate to close them)", compose.Addresses(open))
	case len(d.Machine) == 0:
		rep.add("host", name, "ok", "the engine's machine has no public address (its private ones are closed with the private ranges)")
	default:
		rep.add("host", name, "ok", "the gate closes the engine's machine at %s", compose.Addresses(d.Machine))
	}
}

// refusedCode is the HTTP status the gate answers a refused request with,
// itself (the proxy refusing: 407, as its proxy library does).
const refusedCode = "407"

// doorProbes are run in the agent as one shell script; each prints its name,
// then what curl saw: the HTTP status, the CONNECT status, curl's exit.
// None sends a packet anywhere the rules close: the gate refuses before it
// connects, and a direct connection has no route to leave by.
func doorProbes(d Door) string {
	// Every probe runs at once, each printing one whole line (a short
	// write, so lines never interleave); the script waits for them all.
	probe := func(name, url string, extra string) string {
		return fmt.Sprintf("( echo \"%s $(curl -s -m 8 %s-o /dev/null -w '%%{http_code} %%{http_connect}' '%s'; echo \" $?\")\" ) &\n", name, extra, url)
	}
	var s strings.Builder
	// The default route's gateway, if the agent has one: on the inside
	// network it is an address no machine holds, so a direct connection
	// finds no one; one that is refused or answered reached a machine.
	// A machine on the box's bridge answers within a second: one second
	// without an answer is nobody there (no wait for the ARP to give up).
	s.WriteString("gw=$(awk 'NR>1 && $2==\"00000000\"{print $3; exit}' /proc/net/route)\n")
	s.WriteString("( if [ -n \"$gw\" ]; then gw=$(printf '%d.%d.%d.%d' 0x$(echo $gw | cut -c7-8) 0x$(echo $gw | cut -c5-6) 0x$(echo $gw | cut -c3-4) 0x$(echo $gw | cut -c1-2)); " +
		"out=$(curl -sv -m 1 --noproxy '*' -o /dev/null http://$gw:9/ 2>&1); code=$?; " +
		"echo \"direct $gw $code $(echo \"$out\" | grep -oi 'connection refused\\|no route to host\\|timed out' | head -n 1)\"; else echo 'direct none'; fi ) &\n")
	// The gate's health route, then what the network showed of the gate:
	// the address its name resolves to, the flags of the neighbour entry
	// for it (0x2: its MAC address answered) and the seconds curl took to
	// connect (0 when it never did).
	s.WriteString("( r=$(curl -s -m 8 --noproxy '*' -o /dev/null -w '%{http_code} %{http_connect} %{time_connect}' 'http://gate:3129/_health'); c=$?; set -- $r; echo \"health $1 $2 $c\"; " +
		"ip=$(getent hosts gate | awk '{print $1; exit}'); echo \"gatenet ${ip:--} $(awk -v ip=\"$ip\" '$1 == ip {f = $3} END {print (f == \"\" ? \"-\" : f)}' /proc/net/arp) ${3:-0}\" ) &\n")
	// The control plane, which listens: a connection made to it (any HTTP
	// answer, or a TLS failure after the connection) is a way out; curl's
	// exits 6, 7 and 28 (no address, refused or rejected, no answer) are
	// none.
	if d.ControlPlane != "" && !strings.ContainsAny(d.ControlPlane, "'\\\n") {
		s.WriteString(fmt.Sprintf("( echo \"controlplane $(curl -sk -m 2 --noproxy '*' -o /dev/null -w '%%{http_code}' '%s'; echo \" $?\")\" ) &\n", d.ControlPlane))
	}
	s.WriteString(probe("private", "http://10.255.255.1/", ""))
	s.WriteString(probe("linklocal", "http://169.254.0.1/", ""))
	if d.Egress != "open" {
		s.WriteString(probe("other", "http://boxes-doctor.invalid/", ""))
	}
	if d.Allowed != "" {
		s.WriteString(probe("allowed", d.Allowed, ""))
	}
	s.WriteString("wait\n")
	return s.String()
}

// gateUnanswered says what the network showed of a gate that did not
// answer (health: curl's HTTP status, CONNECT status and exit; gatenet:
// the address the name gate resolved to, its neighbour entry's flags and
// the seconds to connect), "" when it showed nothing to go by.
func gateUnanswered(health, gatenet []string) string {
	if len(gatenet) != 3 {
		return ""
	}
	ip, flags := gatenet[0], gatenet[1]
	connected := strings.Trim(gatenet[2], "0.") != ""
	timedOut := len(health) == 3 && health[2] == "28"
	switch {
	case ip == "-":
		return "; the name gate does not resolve there (the engine's DNS for the box's network)"
	case connected && timedOut:
		return fmt.Sprintf("; the connection to %s was made, but the gate did not answer within 8 s: it is stuck (paused, or starved of CPU)", ip)
	case flags == "-" || flags == "0x0":
		return fmt.Sprintf("; nothing on the box's network answers for the gate's address %s (no neighbour entry): the gate is not on that network", ip)
	case timedOut:
		return fmt.Sprintf("; the gate's address %s had answered on the box's network (the agent holds its MAC address), but the connection got no answer: something drops traffic inside the box's network (a firewall on the engine's machine: iptables FORWARD), or the gate left it", ip)
	}
	return fmt.Sprintf("; its address is %s", ip)
}

// clusterGateUnanswered says where to look when a box's gate on a cluster
// does not answer: the name is its Service's address.
func clusterGateUnanswered(gatenet []string) string {
	ip := "-"
	if len(gatenet) > 0 {
		ip = gatenet[0]
	}
	if ip == "-" {
		return "; the name gate does not resolve there (boxes gives the agent's pod the gate Service's address as a host alias: boxes apply remakes it)"
	}
	return fmt.Sprintf("; the name gate is the gate Service's address %s, which the cluster's Service routing (kube-proxy or its equivalent) must carry to the gate's pod: a cluster without it leaves the agent no way out", ip)
}

// checkDoor runs the probes in the agent container id and reads them.
func checkDoor(ctx context.Context, r engine.Runner, id string, d Door) []hb.Check {
	return checkDoorOf(ctx, r, id, hb.AgentUser, "", d)
}

// checkExecutorDoor runs the probes in the executor container id, through
// its own side of the gate, and reads them: each check's name begins
// "executor: ".
func checkExecutorDoor(ctx context.Context, r engine.Runner, id string, d Door) []hb.Check {
	return checkDoorOf(ctx, r, id, "", "executor: ", d)
}

// checkDoorOf runs the probes in container id as user, naming each check
// after who ("" for the agent).
func checkDoorOf(ctx context.Context, r engine.Runner, id, user, who string, d Door) []hb.Check {
	checks := readDoor(ctx, r, id, user, d)
	for i := range checks {
		checks[i].Name = who + checks[i].Name
	}
	return checks
}

func readDoor(ctx context.Context, r engine.Runner, id, user string, d Door) []hb.Check {
	var out, errb bytes.Buffer
	code, err := r.Run(ctx, id, user, []string{"sh", "-c", doorProbes(d)}, &out, &errb)
	if err != nil || code != 0 {
		return []hb.Check{{Where: "box", Name: "network door", Severity: "error", Detail: fmt.Sprintf("the probes could not run (exit %d, %v): %s", code, err, strings.TrimSpace(errb.String()))}}
	}
	seen := map[string][]string{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 0 {
			seen[f[0]] = f[1:]
		}
	}
	var checks []hb.Check
	add := func(name string, ok bool, okText, badText string) {
		c := hb.Check{Where: "box", Name: name, OK: ok, Severity: "ok", Detail: okText}
		if !ok {
			c.Severity, c.Detail = "error", badText
		}
		checks = append(checks, c)
	}
	if d.Cluster {
		// A pod's gateway is its node, and a cluster's NetworkPolicy
		// enforcer may reject a connection (an ICMP error, which curl
		// reads as refused) where Docker's inside network has no one to
		// answer: refused is no machine reached. The proof is the control
		// plane, which listens.
		cp := seen["controlplane"]
		closed := clusterDirectClosed(seen["direct"]) && (d.ControlPlane == "" || controlPlaneClosed(cp))
		add("no way around the gate", closed, "a direct connection (curl --noproxy) reaches neither the node nor the cluster's API server",
			fmt.Sprintf("a direct connection from the agent reached a machine (%s; the API server %s: %s): traffic can bypass the gate (the cluster does not enforce the box's NetworkPolicies: boxes apply puts them back, and the cluster's network must enforce them)", strings.Join(seen["direct"], " "), d.ControlPlane, strings.Join(cp, " ")))
	} else {
		add("no way around the gate", directClosed(seen["direct"]), "a direct connection (curl --noproxy, raw TCP, UDP) finds no machine to leave by",
			fmt.Sprintf("a direct connection from the agent reached a machine (%s): traffic can bypass the gate (boxes apply remakes the box on its inside network)", strings.Join(seen["direct"], " ")))
	}
	health := seen["health"]
	why := gateUnanswered(health, seen["gatenet"])
	if d.Cluster {
		why = clusterGateUnanswered(seen["gatenet"])
	}
	add("gate answers", len(health) > 0 && health[0] == "200", "the gate answers on gate:3129",
		fmt.Sprintf("the gate does not answer from the agent (%s)%s: boxes logs %s", strings.Join(health, " "), why, "NAME gate"))
	for _, p := range []struct{ key, what string }{{"private", "a private address (10.255.255.1)"}, {"linklocal", "a link-local address, where cloud metadata lives (169.254.0.1)"}} {
		add("gate refuses "+p.key, refusedByGate(seen[p.key]), "the gate refuses "+p.what,
			fmt.Sprintf("%s was not refused by the gate (%s)", p.what, strings.Join(seen[p.key], " ")))
	}
	if d.Egress != "open" {
		add("gate refuses the rest", refusedByGate(seen["other"]), "the gate refuses a destination egress: does not list",
			fmt.Sprintf("a destination egress: does not list was not refused (%s)", strings.Join(seen["other"], " ")))
	}
	if d.Allowed != "" {
		a := seen["allowed"]
		if refusedByGate(a) {
			add("gate allows", false, "", fmt.Sprintf("the gate refuses %s, which egress: allows (boxes egress NAME shows why)", d.Allowed))
		} else if len(a) < 3 || a[2] != "0" {
			checks = append(checks, hb.Check{Where: "box", Name: "gate allows", OK: true, Severity: "warn",
				Detail: fmt.Sprintf("the gate let %s through, but it did not answer (%s)", d.Allowed, strings.Join(a, " "))})
		} else {
			add("gate allows", true, fmt.Sprintf("%s answers through the gate", d.Allowed), "")
		}
	}
	return checks
}

// directClosed reads the direct probe, "none" (no default route) or
// "GATEWAY EXIT WHY", WHY being what curl's verbose output says of the
// connection (connection refused, no route to host, timed out): closed
// when nothing answered at the gateway: curl could not connect (exit 7) or
// timed out (28), and no machine refused the connection.
func directClosed(f []string) bool {
	if len(f) == 1 && f[0] == "none" {
		return true
	}
	if len(f) < 2 || (f[1] != "7" && f[1] != "28") {
		return false
	}
	return !strings.Contains(strings.ToLower(strings.Join(f, " ")), "refused")
}

// clusterDirectClosed reads the direct probe on a cluster: no gateway, or
// a connection to it that failed (curl's exit 7, refused or rejected) or
// got no answer (28).
func clusterDirectClosed(f []string) bool {
	if len(f) == 1 && f[0] == "none" {
		return true
	}
	return len(f) >= 2 && (f[1] == "7" || f[1] == "28")
}

// controlPlaneClosed reads the control plane's probe, "HTTP EXIT": closed
// when no connection was made (no HTTP answer, and curl's exit 6, 7 or
// 28); a probe that did not run is not closed.
func controlPlaneClosed(f []string) bool {
	if len(f) != 2 || f[0] != "000" {
		return false
	}
	return f[1] == "6" || f[1] == "7" || f[1] == "28"
}

// refusedByGate reads a probe's "HTTP CONNECT EXIT": the gate's own refusal,
// as the answer to the request or to its CONNECT.
func refusedByGate(f []string) bool {
	return len(f) >= 2 && (f[0] == refusedCode || f[1] == refusedCode)
}
