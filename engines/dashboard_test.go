package engines

import (
	"strings"
	"testing"

	"github.com/hermes-box/boxes/docker"
)

// open says what it did without the token, and that a forward stays open.
func TestDashboardText(t *testing.T) {
	d := &Dashboard{Box: "alpha", URL: "http://127.0.0.1:4801", Token: "secret", Browser: []string{"xdg-open"}}
	var b strings.Builder
	d.WriteText(&b)
	if want := "opened the dashboard of alpha (http://127.0.0.1:4801/) with xdg-open, signed in through a one-time local address; the token was not printed\n"; b.String() != want {
		t.Errorf("direct: %q, want %q", b.String(), want)
	}
	if err := d.Wait(t.Context()); err != nil {
		t.Errorf("Wait with no forward: %v", err)
	}
	b.Reset()
	d.Via, d.Forward = ", forwarded over ssh to 127.0.0.1:4801 on host nexus", &docker.Forward{}
	d.WriteText(&b)
	if got := b.String(); strings.Contains(got, "secret") || !strings.HasSuffix(got, "on host nexus) with xdg-open, signed in through a one-time local address; the token was not printed\nthe forward stays open until Ctrl-C\n") {
		t.Errorf("forwarded: %q", got)
	}
}

// The local engine's machine is named as such, not as an empty host: with
// DOCKER_HOST=ssh:// it is another machine too.
func TestMachine(t *testing.T) {
	for host, want := range map[string]string{"": "the engine's machine", "far": "host far"} {
		if got := machine(host); got != want {
			t.Errorf("machine(%q) = %q, want %q", host, got, want)
		}
	}
}
