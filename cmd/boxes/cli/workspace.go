package cli

import (
	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/workspace"
)

// Engines, when not nil, makes what reaches every host in place of Docker,
// once per workspace opened. Only the test binary sets it, so that
// cmd/boxes's scripts run the real command line on a fake engine
// (internal/fakeengine); the shipped boxes never does, and nothing it reads
// (flag, file or environment) can.
var Engines func() workspace.Connector

// inWorkspace reads boxes.yaml and boxes.lock, runs fn on the workspace,
// whose engines are reached on first use, and closes it.
func inWorkspace(env *Env, fn func(ws *workspace.Workspace) error) error {
	var connect workspace.Connector = docker.Connector{}
	if Engines != nil {
		connect = Engines()
	}
	ws, err := workspace.Open(env.File, workspace.Options{Connect: connect, Shown: shown, Warn: env.Warnf})
	if err != nil {
		return err
	}
	defer ws.Close()
	return fn(ws)
}
