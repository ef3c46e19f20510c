package docker

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/docker/compose/v2/pkg/api"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/go-connections/nat"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
)

// previous is a box's containers as the engine described them before a
// recreate: everything needed to make them again, the same.
type previous struct {
	e          *Engine
	box        string
	containers []container.InspectResponse
}

// Previous records box's containers (one inspect each) so that a recreate
// whose new containers fail can put them back; nil when the box has none.
func (e *Engine) Previous(ctx context.Context, box string) (engine.Previous, error) {
	cs, err := e.boxContainers(ctx, box)
	if err != nil {
		return nil, err
	}
	if len(cs) == 0 {
		return nil, nil
	}
	p := &previous{e: e, box: box}
	for _, c := range cs {
		info, err := e.api.ContainerInspect(ctx, c.ID)
		if err != nil {
			return nil, fmt.Errorf("inspecting %s: %w", firstOr(c.Names, c.ID), err)
		}
		p.containers = append(p.containers, info)
	}
	// The executor first: the agent's first start expects it.
	sort.SliceStable(p.containers, func(i, j int) bool {
		return p.containers[i].Config.Labels[api.ServiceLabel] == compose.ExecutorService &&
			p.containers[j].Config.Labels[api.ServiceLabel] != compose.ExecutorService
	})
	return p, nil
}

// boxContainers are box's containers, not the one-off containers boxes
// runs on its volumes.
func (e *Engine) boxContainers(ctx context.Context, box string) ([]container.Summary, error) {
	list, err := e.api.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(
		filters.Arg("label", compose.ManagedLabel+"=1"),
		filters.Arg("label", compose.BoxLabel+"="+box),
	)})
	if err != nil {
		return nil, err
	}
	var out []container.Summary
	for _, c := range list {
		if c.Labels[compose.OneOffLabel] == "" {
			out = append(out, c)
		}
	}
	return out, nil
}

// Restore removes the box's current containers and makes the recorded
// ones again: their image by ID (a tag may have moved to the new image),
// their configuration, names and labels, and the host port they published,
// so the executor's URL stays the same. Volumes are never touched.
func (p *previous) Restore(ctx context.Context) (bool, error) {
	e := p.e
	current, err := e.boxContainers(ctx, p.box)
	if err != nil {
		return false, err
	}
	for _, c := range current {
		if err := e.RemoveContainer(ctx, c.ID); err != nil {
			return false, fmt.Errorf("removing %s: %w", firstOr(c.Names, c.ID), err)
		}
	}
	started := false
	for _, old := range p.containers {
		name := strings.TrimPrefix(old.Name, "/")
		cfg := *old.Config
		cfg.Image = old.Image
		host := *old.HostConfig
		host.PortBindings = keptPorts(old)
		var nets []string
		for n := range old.NetworkSettings.Networks {
			nets = append(nets, n)
		}
		sort.Strings(nets)
		endpoint := func(n string) *network.EndpointSettings {
			var aliases []string
			for _, a := range old.NetworkSettings.Networks[n].Aliases {
				// The engine adds the container's short ID itself.
				if !strings.HasPrefix(old.ID, a) {
					aliases = append(aliases, a)
				}
			}
			return &network.EndpointSettings{Aliases: aliases}
		}
		var netCfg *network.NetworkingConfig
		if len(nets) > 0 {
			// Engines before API 1.44 take one network at create.
			netCfg = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{nets[0]: endpoint(nets[0])}}
		}
		made, err := e.api.ContainerCreate(ctx, &cfg, &host, netCfg, nil, name)
		if err != nil {
			return false, fmt.Errorf("making %s again: %w", name, err)
		}
		for _, n := range nets[min(1, len(nets)):] {
			if err := e.api.NetworkConnect(ctx, n, made.ID, endpoint(n)); err != nil {
				return false, fmt.Errorf("connecting %s to %s: %w", name, n, err)
			}
		}
		if old.State == nil || !(old.State.Running || old.State.Restarting || old.State.Paused) {
			continue
		}
		if err := e.api.ContainerStart(ctx, made.ID, container.StartOptions{}); err != nil {
			return false, fmt.Errorf("starting %s: %w", name, err)
		}
		started = true
	}
	return started, nil
}

// keptPorts are the container's port bindings with the host port Docker
// chose filled in, where it chose one.
func keptPorts(c container.InspectResponse) nat.PortMap {
	out := nat.PortMap{}
	for port, bindings := range c.HostConfig.PortBindings {
		var got []nat.PortBinding
		if c.NetworkSettings != nil {
			got = c.NetworkSettings.Ports[port]
		}
		kept := make([]nat.PortBinding, len(bindings))
		for i, b := range bindings {
			kept[i] = b
			if b.HostPort != "" && b.HostPort != "0" {
				continue
			}
			for _, g := range got {
				if n, err := strconv.Atoi(g.HostPort); err == nil && n > 0 && (b.HostIP == "" || b.HostIP == g.HostIP) {
					kept[i].HostPort = g.HostPort
					break
				}
			}
		}
		out[port] = kept
	}
	return out
}
