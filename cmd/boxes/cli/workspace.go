package cli

import (
	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/engines"
	"github.com/hermes-box/boxes/workspace"
)

// Engines, when not nil, makes what reaches every host in place of Docker,
// once per workspace opened, for the commands that need no Docker client
// of their own (all but exec, logs, egress and open). Only the test binary
// sets it, so that cmd/boxes's scripts run the real command line on a fake
// engine (internal/fakeengine); the shipped boxes never does, and nothing
// it reads (flag, file or environment) can.
var Engines func() workspace.Connector

// inWorkspace reads boxes.yaml and boxes.lock, runs fn on the workspace,
// whose engines are reached on first use, and closes it.
func inWorkspace(env *Env, fn func(ws *workspace.Workspace) error) error {
	if Engines != nil {
		ws, err := workspace.Open(env.File, workspace.Options{Connect: Engines(), Shown: shown, Warn: env.Warnf})
		if err != nil {
			return err
		}
		defer ws.Close()
		return fn(ws)
	}
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
