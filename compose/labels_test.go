package compose

import (
	"testing"

	"github.com/docker/compose/v2/pkg/api"
)

// The compose labels boxes keeps in its own table are compose's.
func TestComposeLabels(t *testing.T) {
	for ours, theirs := range map[string]string{
		ComposeProjectLabel:     api.ProjectLabel,
		ComposeServiceLabel:     api.ServiceLabel,
		ComposeConfigHashLabel:  api.ConfigHashLabel,
		ComposeWorkingDirLabel:  api.WorkingDirLabel,
		ComposeConfigFilesLabel: api.ConfigFilesLabel,
		ComposeOneoffLabel:      api.OneoffLabel,
	} {
		if ours != theirs {
			t.Errorf("boxes names compose's label %q, compose %q", ours, theirs)
		}
	}
}
