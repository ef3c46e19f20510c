package cli

import (
	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/engines"
	"github.com/hermes-box/boxes/workspace"
)

// inWorkspace reads boxes.yaml and boxes.lock, runs fn on the workspace,
// whose engines are reached on first use, and closes it.
func inWorkspace(env *Env, fn func(ws *workspace.Workspace) error) error {
	return inEngines(env, func(ws *engines.Workspace) error { return fn(ws.Workspace) })
}

// inEngines is inWorkspace for the commands that work inside a box through
// the Docker client itself (exec, logs, open).
func inEngines(env *Env, fn func(ws *engines.Workspace) error) error {
	ws, err := engines.Open(env.File, docker.Options{}, shown, env.Warnf)
	if err != nil {
		return err
	}
	defer ws.Close()
	return fn(ws)
}
