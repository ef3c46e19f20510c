package docker

import (
	"context"
	"fmt"
	"strings"
	"time"

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

// Pause freezes every process of container id (the cgroup freezer).
func (e *Engine) Pause(ctx context.Context, id string) error {
	var err error
	for try := 0; try < pauseTries; try++ {
		if try > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(pauseRetry):
			}
		}
		// The cgroup freezer gives up on processes that keep running
		// (a busy machine, a process forking): runc thaws them again and
		// says so; another try usually catches them.
		if err = e.api.ContainerPause(ctx, id); err == nil || !strings.Contains(err.Error(), "unable to freeze") {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("pausing the container: %w", err)
	}
	return nil
}

// pauseTries and pauseRetry bound the tries of a pause the freezer refused.
const (
	pauseTries = 10
	pauseRetry = 200 * time.Millisecond
)

// Unpause thaws container id if it is paused, and does nothing otherwise.
func (e *Engine) Unpause(ctx context.Context, id string) error {
	c, err := e.api.ContainerInspect(ctx, id)
	if err != nil {
		return fmt.Errorf("inspecting the container: %w", err)
	}
	if c.State == nil || !c.State.Paused {
		return nil
	}
	if err := e.api.ContainerUnpause(ctx, id); err != nil {
		return fmt.Errorf("unpausing the container: %w", err)
	}
	return nil
}
