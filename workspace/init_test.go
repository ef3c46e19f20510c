package workspace_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/workspace"
)

// A second init refuses to overwrite boxes.yaml, saying what to do instead.
func TestInitRefusesToOverwrite(t *testing.T) {
	dir := t.TempDir()
	if _, err := workspace.Init(dir); err != nil {
		t.Fatal(err)
	}
	wrote, err := workspace.Init(dir)
	if !errors.Is(err, workspace.ErrExists) || wrote != nil || !slices.Equal(hint.Lines(err), []string{"edit it, or run boxes validate"}) {
		t.Errorf("second init: %v %q", err, hint.Lines(err))
	}
}
