package docker

import (
	"errors"
	"testing"

	"github.com/hermes-box/boxes/engine"
)

// The engine's refusals that a killed apply's late request causes are
// reconcile.ErrRaced, their message unchanged; other errors are not.
func TestRaced(t *testing.T) {
	e := &Engine{}
	for msg, want := range map[string]bool{
		"Error response from daemon: network hbl-a_default is ambiguous (2 matches found on name)":                        true,
		`Error response from daemon: Conflict. The container name "/hbl-a-agent-1" is already in use by container "0123"`: true,
		"Error response from daemon: No such image: sha256:1234":                                                          false,
	} {
		err := e.raced(errors.New(msg))
		if errors.Is(err, engine.ErrRaced) != want || err.Error() != msg {
			t.Errorf("%q: ErrRaced %v (want %v), message %q", msg, errors.Is(err, engine.ErrRaced), want, err)
		}
	}
	if e.raced(nil) != nil {
		t.Error("no error became one")
	}
}
