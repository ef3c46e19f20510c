package docker

import (
	"context"
	"fmt"

	"github.com/docker/compose/v2/pkg/api"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
)

// unpause resumes the project's paused containers (a save killed while it
// had the box frozen): compose's start skips them, and Docker refuses to
// start a paused container. One list call; an unpause per paused container.
func (e *Engine) unpause(ctx context.Context, project string) error {
	paused, err := e.api.ContainerList(ctx, container.ListOptions{Filters: filters.NewArgs(
		filters.Arg("label", api.ProjectLabel+"="+project),
		filters.Arg("status", "paused"),
	)})
	if err != nil {
		return fmt.Errorf("listing paused containers of %s: %w", project, err)
	}
	for _, c := range paused {
		if err := e.api.ContainerUnpause(ctx, c.ID); err != nil && !IsNotFound(err) {
			return fmt.Errorf("unpausing %s: %w", firstOr(c.Names, c.ID), err)
		}
	}
	return nil
}
