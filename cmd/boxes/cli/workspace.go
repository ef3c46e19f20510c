package cli

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/kube"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/workspace"
)

// Connectors make what reaches each kind of host, once per workspace opened
// (a connector may keep what it connected).
type Connectors map[spec.HostKind]func() engine.Connector

// DefaultConnectors are the shipped boxes': Docker engines and Kubernetes
// namespaces. The test binary runs the same command line with others (MainWith), so that cmd/boxes's
// scripts run on fake engines (internal/fakeengine); nothing the shipped
// boxes reads (flag, file or environment) can change them.
func DefaultConnectors() Connectors {
	return Connectors{
		spec.HostDocker:     func() engine.Connector { return docker.Connector{} },
		spec.HostKubernetes: func() engine.Connector { return kube.Connector{} },
	}
}

// kinds are c's connectors made for one workspace.
func (c Connectors) kinds() workspace.Kinds {
	k := workspace.Kinds{}
	for kind, make := range c {
		k[kind] = make()
	}
	return k
}

// inWorkspace reads boxes.yaml and boxes.lock, runs fn on the workspace,
// whose engines are reached on first use, and closes it.
func inWorkspace(env *Env, fn func(ws *workspace.Workspace) error) error {
	return inConfinedWorkspace(env, workspace.Confine{}, fn)
}

// inConfinedWorkspace is inWorkspace with the boxes fn works on confined
// by c (see confineFlags).
func inConfinedWorkspace(env *Env, c workspace.Confine, fn func(ws *workspace.Workspace) error) error {
	if c.Lease != "" && c.NoPool {
		return hint.Wrap(errors.New("--lease and --no-pool go apart: --lease works only in the box it names the lease of, --no-pool refuses every pool's box"),
			"pass --lease ID to work in a box you leased, or --no-pool to keep off every pool's box")
	}
	ws, err := workspace.Open(env.File, workspace.Options{Connect: env.connectors.kinds(), Shown: shown, Warn: env.Warnf, Confine: c})
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
}
