package docker

import (
	"context"
	"errors"
	"testing"
)

// As Docker Engine 20.10 said it while a network plugin of a Kubernetes
// node on the same machine changed FORWARD.
const raceText = `failed to create network hbl-it-gamma_default: Error response from daemon: unable to remove jump to DOCKER-ISOLATION-STAGE-1 rule in FORWARD chain:  (iptables failed: iptables --wait -D FORWARD -j DOCKER-ISOLATION-STAGE-1: iptables v1.8.9 (nf_tables):  RULE_DELETE failed (No such file or directory): rule in chain FORWARD
 (exit status 4))`

func TestFirewallRaced(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{errors.New(raceText), true},
		{errors.New(`driver failed programming external connectivity on endpoint hbl-a-executor-1: (iptables failed: iptables --wait -t nat -A DOCKER -p tcp: Resource temporarily unavailable (exit status 4))`), true},
		{errors.New(`Error response from daemon: Pool overlaps with other one on this address space`), false},
		{errors.New(`iptables failed: iptables: No chain/target/match by that name`), false},
		{errors.New(`open /data/x: No such file or directory`), false},
		{nil, false},
	} {
		if got := firewallRaced(c.err); got != c.want {
			t.Errorf("firewallRaced(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// A request refused for a firewall race is made again until it passes, at
// most firewallTries times; any other error is returned at once.
func TestAgainOnFirewallRace(t *testing.T) {
	ctx := context.Background()
	calls := 0
	err := againOnFirewallRace(ctx, func() error {
		calls++
		if calls < 3 {
			return errors.New(raceText)
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("passed on the third try: err %v after %d calls", err, calls)
	}
	calls = 0
	err = againOnFirewallRace(ctx, func() error { calls++; return errors.New(raceText) })
	if !firewallRaced(err) || calls != firewallTries {
		t.Errorf("always refused: err %v after %d calls, want %d", err, calls, firewallTries)
	}
	calls = 0
	other := errors.New("no such image")
	if err := againOnFirewallRace(ctx, func() error { calls++; return other }); err != other || calls != 1 {
		t.Errorf("other error: %v after %d calls", err, calls)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	calls = 0
	if err := againOnFirewallRace(done, func() error { calls++; return errors.New(raceText) }); !firewallRaced(err) || calls != 1 {
		t.Errorf("with its context done: %v after %d calls", err, calls)
	}
}
