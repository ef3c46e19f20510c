//lint:file-ignore ST1005 errors here repeat the Docker daemon's own words, capitals and all, as boxes meets them

package fakeengine

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/docker/compose/v2/pkg/api"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
)

// Create makes the project's networks, volumes and containers, not
// started, as compose's create does: a container whose config hash and
// image are unchanged stays unless force, and containers of services the
// project no longer has go.
func (e *Engine) Create(_ context.Context, p *types.Project, force bool) error {
	return e.create("Create", p, p.ServiceNames(), force, true)
}

// Replace remakes the containers of the named services alone.
func (e *Engine) Replace(_ context.Context, p *types.Project, services []string) error {
	return e.create("Replace", p, services, true, false)
}

func (e *Engine) create(call string, p *types.Project, services []string, force, removeOrphans bool) error {
	hashes, err := compose.ServiceHashes(p)
	if err != nil {
		return err
	}
	sort.Strings(services)
	return e.edit(call, func(h *Host) error {
		for _, key := range sortedKeys(p.Networks) {
			n := p.Networks[key]
			if _, have := h.network(n.Name); have != nil {
				continue
			}
			labels := merged(n.Labels, n.CustomLabels, map[string]string{
				projectLabel: p.Name, api.NetworkLabel: key, api.VersionLabel: api.ComposeVersion})
			h.Networks = append(h.Networks, &Network{ID: h.newID(e.host), Name: n.Name, Labels: labels})
		}
		for _, key := range sortedKeys(p.Volumes) {
			v := p.Volumes[key]
			if _, have := h.volume(v.Name); have != nil {
				continue
			}
			labels := merged(v.Labels, v.CustomLabels, map[string]string{
				projectLabel: p.Name, api.VolumeLabel: key, api.VersionLabel: api.ComposeVersion})
			h.Volumes = append(h.Volumes, &Volume{Name: v.Name, Labels: labels})
		}
		for _, svc := range services {
			s, ok := p.Services[svc]
			if !ok {
				return fmt.Errorf("no such service: %s", svc)
			}
			if !contains(h.Images, s.Image) {
				return fmt.Errorf("Error response from daemon: No such image: %s", s.Image)
			}
			old := projectContainers(h, p.Name, svc)
			if len(old) == 1 && !force && old[0].Labels[api.ConfigHashLabel] == hashes[svc] && old[0].Image == s.Image {
				continue
			}
			replaced := ""
			for _, c := range old {
				replaced = c.ID
				i, _ := h.container(c.ID)
				h.Containers = append(h.Containers[:i], h.Containers[i+1:]...)
			}
			c, err := e.newContainer(h, p, s, hashes[svc])
			if err != nil {
				return err
			}
			if replaced != "" {
				c.Labels[api.ContainerReplaceLabel] = replaced
			}
			h.Containers = append(h.Containers, c)
		}
		if removeOrphans {
			for _, c := range projectContainers(h, p.Name, "") {
				if _, ok := p.Services[c.Labels[serviceLabel]]; !ok {
					i, _ := h.container(c.ID)
					h.Containers = append(h.Containers[:i], h.Containers[i+1:]...)
				}
			}
		}
		return nil
	})
}

// newContainer is service s of project p as compose creates it.
func (e *Engine) newContainer(h *Host, p *types.Project, s types.ServiceConfig, hash string) (*Container, error) {
	name := s.ContainerName
	if name == "" {
		name = p.Name + "-" + s.Name + "-1"
	}
	if _, taken := h.container(name); taken != nil {
		return nil, fmt.Errorf(`Error response from daemon: Conflict. The container name "/%s" is already in use by container %q`, name, taken.ID)
	}
	c := &Container{
		ID:    h.newID(e.host),
		Name:  name,
		Image: s.Image,
		Labels: merged(s.Labels, s.CustomLabels, map[string]string{
			api.ConfigHashLabel:      hash,
			api.ContainerNumberLabel: "1",
			api.ImageDigestLabel:     s.Image,
			api.DependenciesLabel:    "",
		}),
		Runtime:  s.Runtime,
		State:    "created",
		Networks: map[string]string{},
		Dying:    s.Name == compose.ExecutorService && h.Dying[s.Labels[boxLabel]],
	}
	for k, v := range s.Environment {
		if v != nil {
			c.Env = append(c.Env, k+"="+*v)
		}
	}
	sort.Strings(c.Env)
	for key := range s.Networks {
		n, ok := p.Networks[key]
		if !ok {
			return nil, fmt.Errorf("service %s refers to undefined network %s", s.Name, key)
		}
		_, have := h.network(n.Name)
		if have == nil {
			return nil, fmt.Errorf("network %s not found", n.Name)
		}
		c.Networks[n.Name] = have.ID
	}
	for _, v := range s.Volumes {
		if v.Type != types.VolumeTypeVolume {
			continue
		}
		vc, ok := p.Volumes[v.Source]
		if !ok {
			return nil, fmt.Errorf("service %s refers to undefined volume %s", s.Name, v.Source)
		}
		c.Mounts = append(c.Mounts, Mount{Volume: vc.Name, Destination: v.Target})
	}
	for _, port := range s.Ports {
		hostPort := 0
		if port.Published != "" {
			n, err := strconv.Atoi(port.Published)
			if err != nil {
				return nil, fmt.Errorf("published port %q: %w", port.Published, err)
			}
			hostPort = n
		} else {
			hostPort = h.freePort(s.Labels[boxLabel])
		}
		ip := port.HostIP
		if ip == "" {
			ip = "0.0.0.0"
		}
		c.Ports = append(c.Ports, Port{HostIP: ip, HostPort: hostPort, ContainerPort: int(port.Target)})
	}
	return c, nil
}

// projectContainers are project's containers of service ("" for any).
func projectContainers(h *Host, project, service string) []*Container {
	var out []*Container
	for _, c := range h.Containers {
		if c.Labels[projectLabel] == project && c.Labels[api.OneoffLabel] != "True" && (service == "" || c.Labels[serviceLabel] == service) {
			out = append(out, c)
		}
	}
	return out
}

// Start starts the project's created or stopped containers and unpauses
// paused ones. A box marked dying has its executor exit at once.
func (e *Engine) Start(_ context.Context, p *types.Project) error {
	return e.edit("Start", func(h *Host) error {
		for _, svc := range p.ServiceNames() {
			if len(projectContainers(h, p.Name, svc)) == 0 {
				return fmt.Errorf("service %q has no container to start", svc)
			}
		}
		for _, c := range projectContainers(h, p.Name, "") {
			switch c.State {
			case "running":
				continue
			case "paused":
				c.State = "running"
				continue
			}
			if err := portFree(h, c); err != nil {
				return err
			}
			c.State, c.ExitCode, c.Logs = "running", 0, ""
			if c.Dying {
				c.State, c.ExitCode = "exited", 1
				c.Logs = "executor: fake engine: this executor was made while its box was marked dying"
			}
		}
		return nil
	})
}

// portFree refuses to start c on a host port a running container holds.
func portFree(h *Host, c *Container) error {
	for _, other := range h.Containers {
		if other == c || other.State != "running" {
			continue
		}
		for _, p := range c.Ports {
			for _, q := range other.Ports {
				if p.HostPort == q.HostPort && (p.HostIP == q.HostIP || p.HostIP == "0.0.0.0" || q.HostIP == "0.0.0.0") {
					return fmt.Errorf("Error response from daemon: driver failed programming external connectivity on endpoint %s: Bind for %s:%d failed: port is already allocated", c.Name, p.HostIP, p.HostPort)
				}
			}
		}
	}
	return nil
}

// Stop stops every container of project.
func (e *Engine) Stop(_ context.Context, project string) error {
	return e.edit("Stop", func(h *Host) error {
		for _, c := range projectContainers(h, project, "") {
			if c.State == "running" || c.State == "paused" || c.State == "restarting" {
				c.State, c.ExitCode = "exited", 0
			}
		}
		return nil
	})
}

// RemoveContainer removes one container by ID, running or not; one gone
// already is no error.
func (e *Engine) RemoveContainer(_ context.Context, id string) error {
	return e.edit("RemoveContainer", func(h *Host) error {
		if i, c := h.container(id); c != nil {
			h.Containers = append(h.Containers[:i], h.Containers[i+1:]...)
		}
		return nil
	})
}

// RenameContainer gives the container named from the name to.
func (e *Engine) RenameContainer(_ context.Context, from, to string) error {
	return e.edit("RenameContainer", func(h *Host) error {
		if h.NoRename {
			return fmt.Errorf("renaming %s: %w", from, ErrNotSupported)
		}
		_, c := h.container(from)
		if c == nil {
			return fmt.Errorf("Error response from daemon: No such container: %s", from)
		}
		if _, taken := h.container(to); taken != nil {
			return fmt.Errorf(`Error response from daemon: Conflict. The container name "/%s" is already in use by container %q`, to, taken.ID)
		}
		c.Name = to
		return nil
	})
}

// RemoveNetwork removes one network by ID; a running container on it
// keeps it.
func (e *Engine) RemoveNetwork(_ context.Context, id string) error {
	return e.edit("RemoveNetwork", func(h *Host) error {
		i, n := h.network(id)
		if n == nil {
			return nil
		}
		for _, c := range h.Containers {
			if c.State == "running" && c.Networks[n.Name] == n.ID {
				return fmt.Errorf("Error response from daemon: error while removing network: network %s id %s has active endpoints", n.Name, n.ID)
			}
		}
		h.Networks = append(h.Networks[:i], h.Networks[i+1:]...)
		return nil
	})
}

// RemoveVolume removes one volume by name; a container mounting it keeps it.
func (e *Engine) RemoveVolume(_ context.Context, name string) error {
	return e.edit("RemoveVolume", func(h *Host) error {
		i, v := h.volume(name)
		if v == nil {
			return nil
		}
		for _, c := range h.Containers {
			for _, m := range c.Mounts {
				if m.Volume == name {
					return fmt.Errorf("Error response from daemon: remove %s: volume is in use - [%s]", name, c.ID)
				}
			}
		}
		h.Volumes = append(h.Volumes[:i], h.Volumes[i+1:]...)
		return nil
	})
}

// serviceContainer is box's one container of service, as
// docker.Engine.ServiceContainer finds it.
func serviceContainer(h *Host, box, service string) (*Container, error) {
	var found []*Container
	for _, c := range h.boxContainers(box) {
		if c.Labels[serviceLabel] == service {
			found = append(found, c)
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("found %d %s containers of box %s", len(found), service, box)
	}
	return found[0], nil
}

// ContainerID is the ID of box's one container of service.
func (e *Engine) ContainerID(_ context.Context, box, service string) (string, error) {
	var id string
	err := e.read("ContainerID", func(h *Host) error {
		c, err := serviceContainer(h, box, service)
		if err == nil {
			id = c.ID
		}
		return err
	})
	return id, err
}

// gateOf is box's gate container, which publishes the executor's port
// when the executor has a door; nil when it has none.
func gateOf(h *Host, box string) *Container {
	c, err := serviceContainer(h, box, compose.GateService)
	if err != nil {
		return nil
	}
	return c
}

// WaitReady answers at once, as the Executor of a started box would: with
// where it is reached, or why it is not ready.
func (e *Engine) WaitReady(_ context.Context, box, token string) (string, error) {
	var where string
	err := e.read("WaitReady", func(h *Host) error {
		c, err := serviceContainer(h, box, compose.ExecutorService)
		if err != nil {
			return err
		}
		if err := down(c, false); err != nil {
			return fmt.Errorf("executor of %s: %w", box, err)
		}
		if c.State != "running" {
			return fmt.Errorf("executor of %s is not ready: executor container is %s", box, c.State)
		}
		if !contains(c.Env, compose.TokenVar+"="+token) {
			return fmt.Errorf("executor of %s refused the token: 401 Unauthorized", box)
		}
		for _, c := range []*Container{c, gateOf(h, box)} {
			if c == nil {
				continue
			}
			for _, p := range c.Ports {
				if p.ContainerPort == compose.ExecutorPort {
					where = e.ExecutorReach(p.HostIP, p.HostPort).Where(e.host, box)
					return nil
				}
			}
		}
		return fmt.Errorf("executor of %s is not ready: executor publishes no port", box)
	})
	return where, err
}

// WaitInit answers at once: the agent and the gate run, or why not.
func (e *Engine) WaitInit(_ context.Context, box string) error {
	return e.read("WaitInit", func(h *Host) error {
		for _, service := range []string{compose.AgentService, compose.GateService} {
			c, err := serviceContainer(h, box, service)
			if err != nil {
				return err
			}
			if err := down(c, true); err != nil {
				return fmt.Errorf("%s of %s: %w", service, box, err)
			}
			if c.State != "running" {
				return fmt.Errorf("%s of %s is not ready: the container is %s", service, box, c.State)
			}
		}
		return nil
	})
}

// down is the error of a container whose process has ended, in
// docker.Engine's words (with the exit code where it says it); nil for one
// that has not.
func down(c *Container, withExit bool) error {
	switch c.State {
	case "exited", "restarting", "dead":
	default:
		return nil
	}
	state := c.State
	if withExit && c.ExitCode != 0 {
		state = fmt.Sprintf("%s (exit %d)", c.State, c.ExitCode)
	}
	if c.Logs == "" {
		return fmt.Errorf("the container is %s", state)
	}
	return fmt.Errorf("the container is %s; its last log lines: %s", state, c.Logs)
}

// Previous records box's containers as they are.
func (e *Engine) Previous(_ context.Context, box string) (engine.Previous, error) {
	var p *previous
	err := e.read("Previous", func(h *Host) error {
		cs := h.boxContainers(box)
		if len(cs) == 0 {
			return nil
		}
		p = &previous{e: e, box: box}
		for _, c := range cs {
			copied, err := clone(c)
			if err != nil {
				return err
			}
			p.containers = append(p.containers, copied)
		}
		return nil
	})
	if p == nil {
		return nil, err
	}
	return p, err
}

type previous struct {
	e          *Engine
	box        string
	containers []*Container
}

// Restore replaces the box's containers with the recorded ones, made anew
// (new IDs, the same names, settings and labels), and starts those that ran.
func (p *previous) Restore(_ context.Context) (bool, error) {
	started := false
	err := p.e.edit("Restore", func(h *Host) error {
		for _, c := range h.boxContainers(p.box) {
			i, _ := h.container(c.ID)
			h.Containers = append(h.Containers[:i], h.Containers[i+1:]...)
		}
		for _, rec := range p.containers {
			c, err := clone(rec)
			if err != nil {
				return err
			}
			c.ID = h.newID(p.e.host)
			if rec.State == "running" {
				c.State, c.ExitCode, c.Logs = "running", 0, ""
				started = true
			} else {
				c.State = "created"
			}
			h.Containers = append(h.Containers, c)
		}
		return nil
	})
	return started, err
}

func clone(c *Container) (*Container, error) {
	data, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	var out Container
	return &out, json.Unmarshal(data, &out)
}
