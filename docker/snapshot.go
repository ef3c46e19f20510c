package docker

import (
	"context"
	"fmt"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
)

// RunHelper runs h in a new container of h.Image (as root, no network, the
// image's healthcheck off) and removes it by ID once it ends, fails or ctx
// is cancelled: a helper cut short is killed. The throwaway containers a
// killed command left writing to the volumes h writes are removed first:
// they would write beside it. Those left reading them stay: a snapshot's
// helper left is what marks that snapshot incomplete.
func (e *Engine) RunHelper(ctx context.Context, h engine.Helper) ([]byte, error) {
	labels := compose.Labels(h.Box)
	labels[oneOffLabel] = "1"
	if h.Snapshot != "" {
		labels[compose.SnapshotLabel] = h.Snapshot
	}
	var mounts []mount.Mount
	for _, m := range h.Mounts {
		if m.ReadOnly {
			// The engine would make an empty volume of a name it lacks.
			if _, err := e.api.VolumeInspect(ctx, m.Volume); IsNotFound(err) {
				return nil, fmt.Errorf("volume %s: %w", m.Volume, engine.ErrNoVolume)
			} else if err != nil {
				return nil, e.lost(err)
			}
		} else if m.Labels != nil {
			// Made by the container's create, with its labels.
			if _, err := e.api.VolumeInspect(ctx, m.Volume); err == nil {
				return nil, fmt.Errorf("volume %s: %w", m.Volume, engine.ErrVolumeExists)
			} else if !IsNotFound(err) {
				return nil, e.lost(err)
			}
		} else if err := e.removeWriters(ctx, m.Volume); err != nil {
			return nil, e.lost(err)
		}
		mounts = append(mounts, mount.Mount{Type: mount.TypeVolume, Source: m.Volume, Target: m.Target, ReadOnly: m.ReadOnly,
			VolumeOptions: &mount.VolumeOptions{NoCopy: true, Labels: m.Labels}})
	}
	created, err := e.api.ContainerCreate(ctx,
		&container.Config{Image: h.Image, Entrypoint: h.Cmd, User: "0", WorkingDir: "/", Labels: labels,
			Healthcheck: &container.HealthConfig{Test: []string{"NONE"}}},
		&container.HostConfig{NetworkMode: "none", Mounts: mounts}, nil, nil, "")
	if err != nil {
		return nil, e.lost(err)
	}
	stdout, stderr, code, err := e.runToEnd(ctx, created.ID)
	rerr := e.api.ContainerRemove(context.WithoutCancel(ctx), created.ID, container.RemoveOptions{Force: true})
	if err != nil {
		return nil, e.lost(err)
	}
	if code != 0 {
		return nil, &engine.ExitError{Code: code, Stderr: stderr}
	}
	if rerr = ignoreNotFound(rerr); rerr != nil {
		return nil, fmt.Errorf("removing the helper container %.12s: %w", created.ID, e.lost(rerr))
	}
	return stdout, nil
}

// removeWriters removes the throwaway containers that mount volume
// read-write.
func (e *Engine) removeWriters(ctx context.Context, vol string) error {
	list, err := e.api.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", oneOffLabel), filters.Arg("volume", vol))})
	if err != nil {
		return err
	}
	for _, c := range list {
		for _, m := range c.Mounts {
			if m.Name == vol && m.RW {
				if err := ignoreNotFound(e.api.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})); err != nil {
					return err
				}
				break
			}
		}
	}
	return nil
}
