package docker

import (
	"testing"

	"github.com/hermes-box/boxes/engine"
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
