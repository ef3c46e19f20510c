package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/workspace"
)

// openWorkspace reads boxes.yaml and boxes.lock; engines are reached on first use.
func openWorkspace(env *Env, opts docker.Options) (*workspace.Workspace, error) {
	return workspace.Open(env.File, workspace.Options{
		Connect: func(ctx context.Context, h spec.Host) (workspace.Engine, error) {
			return docker.Connect(ctx, h, opts)
		},
		Shown: shown,
		Warn:  env.Warnf,
		Distinct: func(engines []workspace.Engine) error {
			all := make([]*docker.Engine, 0, len(engines))
			for _, e := range engines {
				if d, ok := e.(*docker.Engine); ok {
					all = append(all, d)
				}
			}
			return docker.DistinctEngines(all)
		},
		Thaw: func(ctx context.Context, e workspace.Engine, configPath, box string) error {
			d, ok := e.(*docker.Engine)
			if !ok {
				return errors.New("not a Docker engine")
			}
			return backup.Thaw(ctx, configPath, d, box)
		},
	})
}

// engineOf is host's engine as the Docker client the in-box commands need.
func engineOf(ctx context.Context, ws *workspace.Workspace, host string) (*docker.Engine, error) {
	e, err := ws.Engine(ctx, host)
	if err != nil {
		return nil, err
	}
	d, ok := e.(*docker.Engine)
	if !ok {
		return nil, errors.New("not a Docker engine")
	}
	return d, nil
}

// boxContainer opens the workspace and finds box name's container of
// service (see Workspace.BoxContainer); the caller closes the workspace.
func boxContainer(ctx context.Context, env *Env, name, service string, running bool, lockAs string) (*workspace.Workspace, *docker.Engine, reconcile.Container, error) {
	ws, err := openWorkspace(env, docker.Options{})
	if err != nil {
		return nil, nil, reconcile.Container{}, err
	}
	e, c, err := ws.BoxContainer(ctx, name, service, running, lockAs)
	d, ok := e.(*docker.Engine)
	if err == nil && !ok {
		err = fmt.Errorf("%s: not a Docker engine", name)
	}
	if err != nil {
		ws.Close()
		return nil, nil, reconcile.Container{}, err
	}
	return ws, d, c, nil
}
