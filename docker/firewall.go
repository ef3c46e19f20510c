package docker

import (
	"context"
	"strings"
	"time"
)

// firewallRaced reports whether err is the engine's firewall update meeting
// another program's change to the same chains at the same moment: with
// iptables over nf_tables, Docker Engine's delete of its jump in FORWARD,
// before it puts the jump back on top for a new network or a published
// port, fails with "No such file or directory" when another program (a
// Kubernetes network plugin, a host firewall) changed the chain under it.
// Nothing was made by the refused request, and the same request made again
// does not meet the race.
func firewallRaced(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "iptables failed") &&
		(strings.Contains(s, "No such file or directory") || strings.Contains(s, "Resource temporarily unavailable"))
}

// firewallTries is how many times a request that met a firewall race is made.
const firewallTries = 4

// againOnFirewallRace makes request, and makes it again (up to firewallTries
// times in all, a little later each time) while the engine refuses it for a
// firewall race. compose's create and start converge on what is there, so a
// request made again finishes what the refused one began.
func againOnFirewallRace(ctx context.Context, request func() error) error {
	for try := 1; ; try++ {
		err := request()
		if try == firewallTries || !firewallRaced(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(try) * 250 * time.Millisecond):
		}
	}
}
