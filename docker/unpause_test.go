package docker

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/docker/docker/client"
)

// pauser answers pauses with the freezer's refusal a number of times.
type pauser struct {
	client.APIClient
	refusals, calls int
	refusal         error
}

func (p *pauser) ContainerPause(context.Context, string) error {
	p.calls++
	if p.calls <= p.refusals {
		return p.refusal
	}
	return nil
}

// A pause the cgroup freezer could not finish is tried again; another
// refusal is not, and a freezer that never finishes fails after its tries.
func TestPauseTriesAgainWhenTheFreezerGivesUp(t *testing.T) {
	freezer := errors.New("Error response from daemon: Cannot pause container 5b38: OCI runtime pause failed: unable to freeze: unknown")
	for _, tc := range []struct {
		name            string
		refusals, calls int
		refusal         error
		fails           bool
	}{
		{"twice", 2, 3, freezer, false},
		{"always", 100, pauseTries, freezer, true},
		{"not running", 1, 1, errors.New("Error response from daemon: Container 5b38 is not running"), true},
	} {
		api := &pauser{refusals: tc.refusals, refusal: tc.refusal}
		err := (&Engine{api: api}).Pause(context.Background(), "5b38")
		if (err != nil) != tc.fails || api.calls != tc.calls || (err != nil && !strings.HasPrefix(err.Error(), "pausing the container: ")) {
			t.Errorf("%s: %v after %d calls, want %d calls", tc.name, err, api.calls, tc.calls)
		}
	}
}
