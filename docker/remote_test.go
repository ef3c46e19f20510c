package docker

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/spec"
)

func TestReach(t *testing.T) {
	cases := []struct {
		endpoint, bind, how, url, onHost string
	}{
		{"ssh://root@10.0.0.5/run/x.sock", "0.0.0.0", engine.ReachDirect, "http://10.0.0.5:4800", "127.0.0.1:4800"},
		{"ssh://root@nexus", "", engine.ReachDirect, "http://nexus:4800", "127.0.0.1:4800"},
		{"ssh://root@nexus", "10.0.0.5", engine.ReachDirect, "http://nexus:4800", "10.0.0.5:4800"},
		// The remote's loopback is not this machine's: no URL, a forward.
		{"ssh://root@nexus:2222", "127.0.0.1", engine.ReachSSHForward, "", "127.0.0.1:4800"},
		{"ssh://root@nexus", "::1", engine.ReachSSHForward, "", "[::1]:4800"},
		{"tcp://10.0.0.5:2376", "0.0.0.0", engine.ReachDirect, "http://10.0.0.5:4800", "127.0.0.1:4800"},
		{"tcp://[fd00::5]:2376", "::", engine.ReachDirect, "http://[fd00::5]:4800", "[::1]:4800"},
		// Over tcp:// there is no ssh to forward a port over.
		{"tcp://[fd00::5]:2376", "::1", engine.ReachHostOnly, "", "[::1]:4800"},
		{"tcp://10.0.0.5:2376", "127.0.0.1", engine.ReachHostOnly, "", "127.0.0.1:4800"},
		{"unix:///var/run/docker.sock", "0.0.0.0", engine.ReachDirect, "http://127.0.0.1:4800", "127.0.0.1:4800"},
		{"unix:///var/run/docker.sock", "127.0.0.1", engine.ReachDirect, "http://127.0.0.1:4800", "127.0.0.1:4800"},
	}
	for _, tc := range cases {
		e := &Engine{Host: "h", Endpoint: Endpoint{Host: "h", URL: tc.endpoint}}
		r := e.ExecutorReach(tc.bind, 4800)
		if r.How != tc.how || r.URL != tc.url || r.OnHost != tc.onHost {
			t.Errorf("%s bound to %q: %+v, want %s %q on the host %s", tc.endpoint, tc.bind, r, tc.how, tc.url, tc.onHost)
		}
	}
	e := &Engine{Host: "nexus", Endpoint: Endpoint{Host: "nexus", URL: "ssh://me@nexus"}}
	if got, want := e.ExecutorReach("127.0.0.1", 4800).Where("nexus", "web"), "127.0.0.1:4800 on host nexus's loopback (boxes open web forwards it here over ssh)"; got != want {
		t.Errorf("Where: %q, want %q", got, want)
	}
	if got := e.ExecutorReach("0.0.0.0", 4800).Where("nexus", "web"); got != "http://nexus:4800" {
		t.Errorf("Where of a direct reach: %q", got)
	}
}

// The connector finds the addresses of a host's machine from its address
// alone: nothing listens at these, and none is reached.
func TestMachineAddressesWithoutTheEngine(t *testing.T) {
	var c Connector
	for _, tc := range []struct {
		host spec.Host
		want []netip.Addr
	}{
		{spec.Host{Name: "a", Docker: "ssh://me@198.51.100.9"}, []netip.Addr{netip.MustParseAddr("198.51.100.9")}},
		{spec.Host{Name: "b", Docker: "ssh://me@[2001:db8::9]:2222"}, []netip.Addr{netip.MustParseAddr("2001:db8::9")}},
	} {
		got, err := c.MachineAddresses(tc.host)
		for i := range got {
			got[i] = got[i].Unmap()
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v %v, want %v", tc.host.Docker, got, err, tc.want)
		}
	}
	// The local engine's machine is this one: its interfaces' addresses.
	local, err := c.MachineAddresses(spec.Host{Docker: "unix:///nowhere/docker.sock", Name: "c"})
	if err != nil || !slices.Contains(local, netip.MustParseAddr("127.0.0.1")) {
		t.Errorf("a unix socket's machine: %v %v, want this machine's interfaces (loopback among them)", local, err)
	}
	// An address the engine could not be reached at is refused as Connect refuses it.
	if _, err := c.MachineAddresses(spec.Host{Name: "d", Docker: "tcp://198.51.100.9:2376"}); err == nil || !strings.Contains(err.Error(), "needs TLS material") {
		t.Errorf("a tcp:// host without tls: %v", err)
	}
}
