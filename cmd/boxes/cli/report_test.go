package cli

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/hermes-box/boxes/apply"
	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/statedir"
	"github.com/hermes-box/boxes/workspace"
)

// Every error goes through Report: one error line per collected error, then
// each hint once, none of them inside the error text.
func TestReport(t *testing.T) {
	locked := fmt.Errorf("%w: .boxes/locks/beta.lock is held by boxes save (pid 7)", statedir.ErrLocked)
	for name, tc := range map[string]struct {
		err  error
		want string
	}{
		"per-box apply errors": {
			hint.Wrap(errors.Join(errors.Join(
				&apply.BoxError{Box: "alpha", Err: fmt.Errorf("restore: %w", archive.ErrWrongPassphrase)},
				&apply.BoxError{Box: "beta", Err: locked},
				&apply.BoxError{Box: "gamma", Err: locked},
			), errors.New("apply failed for 3 of 4 boxes; the others were done")), "boxes plan shows what is left"),
			"boxes: error: alpha: restore: wrong passphrase or not encrypted to this identity\n" +
				"boxes: error: beta: locked: .boxes/locks/beta.lock is held by boxes save (pid 7)\n" +
				"boxes: error: gamma: locked: .boxes/locks/beta.lock is held by boxes save (pid 7)\n" +
				"boxes: error: apply failed for 3 of 4 boxes; the others were done\n" +
				"boxes: hint: boxes plan shows what is left\n" +
				"boxes: hint: check BOXES_PASSPHRASE, or BOXES_IDENTITY for an archive saved to age recipients\n" +
				"boxes: hint: wait for it to finish; a killed boxes process releases its lock by itself\n",
		},
		"undeclared": {
			&workspace.UndeclaredError{Box: "zeta", File: "boxes.yaml", Declared: []string{"alpha", "beta"}},
			"boxes: error: no box \"zeta\" in boxes.yaml\nboxes: hint: declared boxes: alpha, beta\n",
		},
		"no token": {
			fmt.Errorf("box alpha: %w", apply.ErrNoToken),
			"boxes: error: box alpha: the box has no token in .boxes/secrets\nboxes: hint: run boxes plan, which recovers it from the box's containers\n",
		},
		"stale plan": {
			&reconcile.StaleError{File: "p.plan"},
			"boxes: error: plan is stale: the files or the boxes changed since p.plan was saved\nboxes: hint: run boxes plan -out p.plan again and review it\n",
		},
	} {
		var b bytes.Buffer
		Report(&b, tc.err)
		if b.String() != tc.want {
			t.Errorf("%s:\n%s\nwant\n%s", name, b.String(), tc.want)
		}
	}
}

// With --json a failed command's errors are one document: a file's errors
// each at its place, collected errors each with its own hint.
func TestErrorsJSON(t *testing.T) {
	unreachable := func(host string) error {
		return hint.Wrap(fmt.Errorf("host %s: %w", host, errors.New("connection refused")), "check host %s", host)
	}
	got := errorsOf(&ExitError{Code: 1, Err: errors.Join(unreachable("nexus"), unreachable("rack"), errors.New("plain"))})
	want := []errorJSON{
		{Message: "host nexus: connection refused", Hint: "check host nexus"},
		{Message: "host rack: connection refused", Hint: "check host rack"},
		{Message: "plain"},
	}
	if got.FormatVersion != ErrorsFormat || fmt.Sprint(got.Errors) != fmt.Sprint(want) {
		t.Errorf("joined: %+v\nwant %+v", got, want)
	}
	inFile := spec.Errors{
		{File: "boxes.yaml", Line: 3, Col: 5, Msg: "unknown key \"cpu\"", Hint: "did you mean \"cpus\"?"},
		{File: "boxes.yaml", Line: 4, Col: 3, Msg: "missing version"},
	}
	got = errorsOf(inFile)
	want = []errorJSON{
		{File: "boxes.yaml", Line: 3, Col: 5, Message: "unknown key \"cpu\"", Hint: "did you mean \"cpus\"?"},
		{File: "boxes.yaml", Line: 4, Col: 3, Message: "missing version"},
	}
	if fmt.Sprint(got.Errors) != fmt.Sprint(want) {
		t.Errorf("in a file: %+v\nwant %+v", got, want)
	}
}
