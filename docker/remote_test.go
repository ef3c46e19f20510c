package docker

import "testing"

func TestExecutorURL(t *testing.T) {
	cases := []struct {
		endpoint, bind, want string
	}{
		{"ssh://root@10.0.0.5/run/x.sock", "0.0.0.0", "http://10.0.0.5:4800"},
		{"ssh://root@nexus", "", "http://nexus:4800"},
		{"ssh://root@nexus", "10.0.0.5", "http://nexus:4800"},
		{"ssh://root@nexus:2222", "127.0.0.1", "http://127.0.0.1:4800"},
		{"tcp://10.0.0.5:2376", "0.0.0.0", "http://10.0.0.5:4800"},
		{"tcp://[fd00::5]:2376", "::", "http://[fd00::5]:4800"},
		{"tcp://[fd00::5]:2376", "::1", "http://[::1]:4800"},
		{"unix:///var/run/docker.sock", "0.0.0.0", "http://127.0.0.1:4800"},
		{"unix:///var/run/docker.sock", "127.0.0.1", "http://127.0.0.1:4800"},
	}
	for _, tc := range cases {
		e := &Engine{Host: "h", Endpoint: Endpoint{Host: "h", URL: tc.endpoint}}
		if got := e.ExecutorURL(tc.bind, 4800); got != tc.want {
			t.Errorf("%s bound to %q: %s, want %s", tc.endpoint, tc.bind, got, tc.want)
		}
	}
}
