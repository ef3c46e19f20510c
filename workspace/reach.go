package workspace

import "fmt"

// How a person on this machine reaches a port an engine publishes.
const (
	// ReachDirect: at Reach.URL.
	ReachDirect = "direct"
	// ReachSSHForward: the port is on the loopback of a remote engine
	// reached over ssh; boxes open forwards a local port to it.
	ReachSSHForward = "ssh-forward"
	// ReachHostOnly: the port is on the loopback of a remote engine
	// reached without ssh; only that machine reaches it.
	ReachHostOnly = "host-only"
)

// Reach is how a person on this machine reaches a published port.
type Reach struct {
	// How is ReachDirect, ReachSSHForward or ReachHostOnly; "" for no port.
	How string
	// URL is the executor's address from here; "" unless How is ReachDirect.
	URL string
	// OnHost is the address on the engine's machine, as host:port.
	OnHost string
}

// Where is the reach in words for messages about box on host: its URL, or
// how else it is reached.
func (r Reach) Where(host, box string) string {
	switch r.How {
	case ReachSSHForward:
		return fmt.Sprintf("%s on %s loopback (boxes open %s forwards it here over ssh)", r.OnHost, machine(host)+"'s", box)
	case ReachHostOnly:
		return fmt.Sprintf("%s on %s loopback (reachable on that machine only)", r.OnHost, machine(host)+"'s")
	}
	return r.URL
}

// machine names where host's engine runs: the local engine's may be
// another machine too, reached through DOCKER_HOST=ssh://.
func machine(host string) string {
	if host == "" {
		return "the engine's machine"
	}
	return "host " + host
}
