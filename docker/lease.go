package docker

import (
	"context"
	"fmt"
	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
)

// CreateLeaseMark creates lease marker m, named m.Name, as a container of
// image that is never started (no network, no command run): the engine
// refuses a second container of one name, so the first caller alone gets
// it, whatever machine it runs on. A name taken is engine.ErrLeaseTaken.
func (e *Engine) CreateLeaseMark(ctx context.Context, image string, m engine.LeaseMark) (string, error) {
	created, err := e.api.ContainerCreate(ctx,
		&container.Config{Image: image, Entrypoint: []string{"true"}, Labels: compose.LeaseLabels(m),
			Healthcheck: &container.HealthConfig{Test: []string{"NONE"}}},
		&container.HostConfig{NetworkMode: "none"}, nil, nil, m.Name)
	if cerrdefs.IsConflict(err) {
		return "", fmt.Errorf("%s: %w", m.Name, engine.ErrLeaseTaken)
	}
	if err != nil {
		return "", e.lost(err)
	}
	return created.ID, nil
}
