package cli

import (
	"context"

	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/engines"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/workspace"
)

// openWorkspace reads boxes.yaml and boxes.lock; engines are reached on first use.
func openWorkspace(env *Env, opts docker.Options) (*workspace.Workspace, error) {
	return engines.Open(env.File, opts, shown, env.Warnf)
}

// inWorkspace runs fn on the workspace, closed afterwards.
func inWorkspace(env *Env, fn func(ws *workspace.Workspace) error) error {
	ws, err := openWorkspace(env, docker.Options{})
	if err != nil {
		return err
	}
	defer ws.Close()
	return fn(ws)
}

// boxContainer opens the workspace and finds box name's container of
// service (see Workspace.BoxContainer); the caller closes the workspace.
func boxContainer(ctx context.Context, env *Env, name, service string, running bool, lockAs string) (*workspace.Workspace, *docker.Engine, reconcile.Container, error) {
	ws, err := openWorkspace(env, docker.Options{})
	if err != nil {
		return nil, nil, reconcile.Container{}, err
	}
	e, c, err := engines.BoxContainer(ctx, ws, name, service, running, lockAs)
	if err != nil {
		ws.Close()
		return nil, nil, reconcile.Container{}, err
	}
	return ws, e, c, nil
}
