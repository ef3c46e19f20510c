package cli

import (
	"github.com/spf13/cobra"

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
	return inConfinedWorkspace(env, workspace.Confine{}, fn)
}

// inConfinedWorkspace is inWorkspace with the boxes fn works on confined
// by c (see confineFlags).
func inConfinedWorkspace(env *Env, c workspace.Confine, fn func(ws *workspace.Workspace) error) error {
	var connect workspace.Connector = docker.Connector{}
	if Engines != nil {
		connect = Engines()
	}
	ws, err := workspace.Open(env.File, workspace.Options{Connect: connect, Shown: shown, Warn: env.Warnf, Confine: c})
	if err != nil {
		return err
	}
	defer ws.Close()
	return fn(ws)
}

// confineFlags adds --lease and --no-pool, which boxes mcp passes to the
// commands it runs in a box, so that the engine those commands observe
// decides whether a pool's box is theirs to work in.
func confineFlags(cmd *cobra.Command, c *workspace.Confine) {
	cmd.Flags().StringVar(&c.Lease, "lease", "", "act only while the box's lease on its engine is this one (lease --json's \"lease\"), unexpired")
	cmd.Flags().BoolVar(&c.NoPool, "no-pool", false, "refuse a box that is or was a pool's, whatever boxes.yaml says now")
	cmd.MarkFlagsMutuallyExclusive("lease", "no-pool")
}
