//lint:file-ignore ST1005 errors here repeat the Docker daemon's own words, capitals and all, as boxes meets them

package fakeengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/docker/compose/v2/pkg/api"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
)

// The labels the fake engine reads, from the one table boxes and compose keep.
const (
	managedLabel = compose.ManagedLabel
	boxLabel     = compose.BoxLabel
	oneOffLabel  = compose.OneOffLabel
	serviceLabel = api.ServiceLabel
	projectLabel = api.ProjectLabel
)

// The fake engine is what a workspace needs of a host.
var _ engine.Engine = (*Engine)(nil)

// Connector connects the hosts of boxes.yaml to fake engines whose state
// is the file at Path; every host it connects shares that state.
type Connector struct {
	// Path is the file the state is kept in, from one boxes command to the
	// next. "" keeps it in memory alone: a simulated fleet of thousands of
	// boxes, whose file rewritten after each change would make each change
	// cost as much as the whole fleet.
	Path string
	// Latency is how long each call to a host's engine takes, by host name
	// ("" is the local engine): a slow or far machine. A call waits before
	// it reaches the state, so the hosts still answer in parallel.
	Latency map[string]time.Duration
	// Down names the hosts whose engine cannot be reached: Connect fails,
	// in docker.Connect's words.
	Down map[string]bool

	mu    sync.Mutex
	state *State
	// gone are the hosts c reaches no more (Gone), each closed once so.
	gone map[string]chan struct{}
	// calls are the calls made to each host's engine, by call, and waited
	// the latency they took, added up (Calls, Waited).
	calls  map[string]map[string]int64
	waited time.Duration
}

// Connect loads the state, the first time, and returns host's engine.
func (c *Connector) Connect(_ context.Context, h spec.Host) (engine.Engine, error) {
	c.wait(h.Name, "Connect")
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Down[h.Name] {
		return nil, &docker.HostError{Host: h.Name, URL: h.Docker, Err: errors.New("connect: connection refused (fake engine: down)"),
			Hint: "nothing listens there: is the engine (or sshd) running, and is the port right?"}
	}
	if err := c.load(); err != nil {
		return nil, err
	}
	e := &Engine{c: c, host: h.Name, endpoint: h.Docker}
	if c.isGone(h.Name) {
		return nil, e.unreachable()
	}
	c.state.Host(h.Name)
	return e, nil
}

// load loads the state from Path the first time (none is an empty state);
// c.mu is held.
func (c *Connector) load() error {
	if c.state != nil {
		return nil
	}
	s := &State{Hosts: map[string]*Host{}}
	if c.Path != "" {
		var err error
		if s, err = Load(c.Path); err != nil {
			return err
		}
	}
	c.state = s
	return nil
}

// save writes the state to Path, if it is kept there; c.mu is held.
func (c *Connector) save() error {
	if c.Path == "" {
		return nil
	}
	return c.state.Save(c.Path)
}

// wait counts a call to host's engine, and takes the host's latency.
func (c *Connector) wait(host, call string) {
	c.mu.Lock()
	if c.calls == nil {
		c.calls = map[string]map[string]int64{}
	}
	if c.calls[host] == nil {
		c.calls[host] = map[string]int64{}
	}
	c.calls[host][call]++
	d := c.Latency[host]
	c.waited += d
	c.mu.Unlock()
	time.Sleep(d)
}

// Calls are the calls made to each host's engine so far, by host and by
// call (the Engine method's name, and "Connect"); ResetCalls starts again.
func (c *Connector) Calls() map[string]map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]map[string]int64, len(c.calls))
	for host, calls := range c.calls {
		out[host] = maps.Clone(calls)
	}
	return out
}

// Waited is the latency every call so far took, added up, as if the calls
// had been made one after another.
func (c *Connector) Waited() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waited
}

// ResetCalls forgets the calls counted and the latency waited.
func (c *Connector) ResetCalls() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls, c.waited = nil, 0
}

// Engine is one host's fake engine.
type Engine struct {
	c    *Connector
	host string
	// endpoint is the host's docker: address, which says how a person
	// here reaches the ports it publishes (see Reach).
	endpoint string
}

// read runs fn, the engine call named call, on the engine's resources,
// unless the engine is gone.
func (e *Engine) read(call string, fn func(h *Host) error) error {
	e.c.wait(e.host, call)
	return e.peek(fn)
}

// peek is read for what is no call of the engine's: what docker.Engine
// knows from connecting (its capabilities, its machine's addresses), and
// the fake's look at itself.
func (e *Engine) peek(fn func(h *Host) error) error {
	e.c.mu.Lock()
	defer e.c.mu.Unlock()
	if e.c.isGone(e.host) {
		return e.unreachable()
	}
	return fn(e.c.state.Host(e.host))
}

// edit runs fn, the engine call named call, on the engine's resources and
// saves the state, whatever fn did before it failed (as an engine keeps
// what a failed call made); unless the engine is gone.
func (e *Engine) edit(call string, fn func(h *Host) error) error {
	e.c.wait(e.host, call)
	e.c.mu.Lock()
	defer e.c.mu.Unlock()
	if e.c.isGone(e.host) {
		return e.unreachable()
	}
	err := fn(e.c.state.Host(e.host))
	if serr := e.c.save(); serr != nil && err == nil {
		err = serr
	}
	return err
}

func (e *Engine) describe() string {
	if e.host == "" {
		return "the local engine"
	}
	return fmt.Sprintf("host %q", e.host)
}

// ID is the engine's identity: one per host.
func (e *Engine) ID() string {
	if e.host == "" {
		return "fake-engine-local"
	}
	return "fake-engine-" + e.host
}

// SameEngineAs refuses this engine's host as reaching the engine host
// first reaches (never the case: each host has its own fake engine).
func (e *Engine) SameEngineAs(first string) error {
	return fmt.Errorf("%s and %s reach the same Docker engine (ID %s)", reconcile.HostLabel(first), reconcile.HostLabel(e.host), e.ID())
}

// Close does nothing: the state was saved after each change.
func (e *Engine) Close() error { return nil }

// Observe lists the engine's resources as Docker's lists would show them,
// and reads them with docker's own reading (docker.Listing.Observed), so
// that the planner sees exactly what docker.Engine.Observe would give it.
func (e *Engine) Observe(_ context.Context, images ...string) (*engine.Observed, error) {
	l := docker.Listing{Images: images, Sizes: map[string]int64{}}
	look := func(fn func(h *Host) error) error { return e.read("Observe", fn) }
	_ = e.peek(func(h *Host) error {
		for _, c := range h.Containers {
			if c.Unlisted > 0 {
				// This look counts down its Unlisted.
				look = func(fn func(h *Host) error) error { return e.edit("Observe", fn) }
			}
		}
		return nil
	})
	err := look(func(h *Host) error {
		for _, id := range images {
			if contains(h.Images, id) {
				l.Sizes[id] = ImageSize
			}
		}
		for _, c := range h.Containers {
			if c.Unlisted > 0 {
				c.Unlisted--
				continue
			}
			l.Containers = append(l.Containers, summary(c))
		}
		for _, v := range h.Volumes {
			l.Volumes = append(l.Volumes, &volume.Volume{Name: v.Name, Labels: maps.Clone(v.Labels), CreatedAt: Created.Format(time.RFC3339Nano)})
		}
		for _, n := range h.Networks {
			l.Networks = append(l.Networks, network.Summary{ID: n.ID, Name: n.Name, Labels: maps.Clone(n.Labels)})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("observing %s: %w", e.describe(), err)
	}
	o := l.Observed(e.host)
	o.CPUs, o.Memory, o.Runtimes = 4, 16<<30, []string{"runc"}
	o.Sort()
	return o, nil
}

// summary is container c as Docker's container list shows it: a stopped
// container lists no published port, and the status text is Docker's.
func summary(c *Container) container.Summary {
	s := container.Summary{ID: c.ID, Names: []string{"/" + c.Name}, ImageID: c.Image, Labels: maps.Clone(c.Labels),
		State: c.State, Status: status(c), NetworkSettings: &container.NetworkSettingsSummary{Networks: map[string]*network.EndpointSettings{}}}
	for name, id := range c.Networks {
		s.NetworkSettings.Networks[name] = &network.EndpointSettings{NetworkID: id}
	}
	for _, m := range c.Mounts {
		s.Mounts = append(s.Mounts, container.MountPoint{Type: mount.TypeVolume, Name: m.Volume, Destination: m.Destination})
	}
	if c.State == "running" || c.State == "paused" {
		for _, p := range c.Ports {
			s.Ports = append(s.Ports, container.Port{IP: p.HostIP, PublicPort: uint16(p.HostPort), PrivatePort: uint16(p.ContainerPort), Type: "tcp"})
		}
	}
	return s
}

// status is Docker's status text for c, at a fixed age.
func status(c *Container) string {
	switch c.State {
	case "running":
		return "Up 2 minutes (healthy)"
	case "paused":
		return "Up 2 minutes (Paused)"
	case "exited":
		return fmt.Sprintf("Exited (%d) 2 minutes ago", c.ExitCode)
	case "restarting":
		return fmt.Sprintf("Restarting (%d) 1 second ago", c.ExitCode)
	case "created":
		return "Created"
	}
	return c.State
}

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
		for _, p := range c.Ports {
			if p.ContainerPort == compose.ExecutorPort {
				where = e.ExecutorReach(p.HostIP, p.HostPort).Where(e.host, box)
				return nil
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

// VolumeSizes sizes each volume a running container of o mounts at
// VolumeBytes; the others are unread, with docker.Engine's reasons.
func (e *Engine) VolumeSizes(_ context.Context, o *engine.Observed, volumes []string) map[string]reconcile.VolumeSize {
	running, stopped := map[string]bool{}, map[string]bool{}
	for _, c := range o.Containers {
		for _, m := range c.Mounts {
			if c.State == "running" {
				running[m.Volume] = true
			} else {
				stopped[m.Volume] = true
			}
		}
	}
	out := make(map[string]reconcile.VolumeSize, len(volumes))
	for _, v := range volumes {
		switch {
		case running[v]:
			out[v] = reconcile.VolumeSize{Bytes: VolumeBytes}
		case stopped[v]:
			out[v] = reconcile.VolumeSize{Unread: "the box is not running"}
		default:
			out[v] = reconcile.VolumeSize{Unread: "no container mounts it"}
		}
	}
	return out
}

// ContainerEnv is container id's configured environment.
func (e *Engine) ContainerEnv(_ context.Context, id string) ([]string, error) {
	var env []string
	err := e.read("ContainerEnv", func(h *Host) error {
		_, c := h.container(id)
		if c == nil {
			return fmt.Errorf("Error response from daemon: No such container: %s", id)
		}
		env = append(env, c.Env...)
		return nil
	})
	return env, err
}

// ContainerRuntime is the OCI runtime container id runs under.
func (e *Engine) ContainerRuntime(_ context.Context, id string) (string, error) {
	var runtime string
	err := e.read("ContainerRuntime", func(h *Host) error {
		_, c := h.container(id)
		if c == nil {
			return fmt.Errorf("Error response from daemon: No such container: %s", id)
		}
		runtime = c.Runtime
		if runtime == "" {
			runtime = "runc"
		}
		return nil
	})
	return runtime, err
}

// Pause pauses a running container.
func (e *Engine) Pause(_ context.Context, id string) error {
	return e.edit("Pause", func(h *Host) error {
		if h.NoFreeze {
			return fmt.Errorf("pausing %s: %w", id, ErrNotSupported)
		}
		_, c := h.container(id)
		if c == nil || c.State != "running" {
			return fmt.Errorf("Error response from daemon: container %s is not running", id)
		}
		c.State = "paused"
		return nil
	})
}

// Capabilities are Docker's (freeze, rename) but where the host's state
// takes one away.
func (e *Engine) Capabilities() engine.Capabilities {
	caps := engine.Capabilities{}
	_ = e.peek(func(h *Host) error {
		caps = engine.Capabilities{Freeze: !h.NoFreeze, Rename: !h.NoRename}
		return nil
	})
	return caps
}

// Unpause thaws a paused container, and does nothing to another.
func (e *Engine) Unpause(_ context.Context, id string) error {
	return e.edit("Unpause", func(h *Host) error {
		if h.NoFreeze {
			return fmt.Errorf("unpausing %s: %w", id, ErrNotSupported)
		}
		if _, c := h.container(id); c != nil && c.State == "paused" {
			c.State = "running"
		}
		return nil
	})
}

// ExecutorReach is how a person here reaches bind:port, as docker.Engine
// says it: a remote engine's port is reached at the engine's address,
// unless it is bound to the remote's loopback.
func (e *Engine) ExecutorReach(bind string, port int) engine.Reach {
	onHost := strings.TrimPrefix(reconcile.ExecutorURL(bind, port), "http://")
	u, err := url.Parse(e.endpoint)
	addr := ""
	if err == nil && (u.Scheme == "ssh" || u.Scheme == "tcp") {
		addr = u.Hostname()
	}
	ip := net.ParseIP(bind)
	switch {
	case port == 0:
		return engine.Reach{}
	case addr == "":
		return engine.Reach{How: engine.ReachDirect, URL: reconcile.ExecutorURL(bind, port), OnHost: onHost}
	case ip == nil || !ip.IsLoopback():
		return engine.Reach{How: engine.ReachDirect, URL: reconcile.ExecutorURL(addr, port), OnHost: onHost}
	case u.Scheme == "ssh":
		return engine.Reach{How: engine.ReachSSHForward, OnHost: onHost}
	}
	return engine.Reach{How: engine.ReachHostOnly, OnHost: onHost}
}

// MachineAddresses are the addresses of the engine's machine as
// docker.Engine finds them, with no lookup: a tcp:// or ssh:// host given
// as an address is that address; the local engine's machine (whatever
// machine the tests run on) and a named host have none. Those a test gave
// the machine (Host.Machine) come with them.
func (e *Engine) MachineAddresses() []netip.Addr {
	var out []netip.Addr
	_ = e.peek(func(h *Host) error {
		for _, s := range h.Machine {
			if a, err := netip.ParseAddr(s); err == nil {
				out = append(out, a)
			}
		}
		return nil
	})
	u, err := url.Parse(e.endpoint)
	if err != nil || (u.Scheme != "ssh" && u.Scheme != "tcp") {
		return out
	}
	if a, err := netip.ParseAddr(u.Hostname()); err == nil {
		out = append(out, a)
	}
	return out
}

// Logs writes what the fake keeps of container id's output (its last
// lines, see Container.Logs) to stdout; tail and follow are the engine's.
func (e *Engine) Logs(_ context.Context, id string, _ engine.LogOptions, stdout, _ io.Writer) error {
	return e.read("Logs", func(h *Host) error {
		_, c := h.container(id)
		if c == nil {
			return fmt.Errorf("Error response from daemon: No such container: %s", id)
		}
		_, err := io.WriteString(stdout, c.Logs)
		return err
	})
}

// StillRunning reports whether container id runs.
func (e *Engine) StillRunning(_ context.Context, id string) (bool, error) {
	running := false
	err := e.read("StillRunning", func(h *Host) error {
		_, c := h.container(id)
		running = c != nil && c.State == "running"
		return nil
	})
	return running, err
}

// Forward would forward a port over ssh.
func (e *Engine) Forward(_ context.Context, bind string, port int) (engine.Forward, error) {
	return nil, fmt.Errorf("forwarding to %s:%d: %w", bind, port, ErrNotSupported)
}

// Run execs in a running container as far as freezing a box goes: the
// guest's hb quiesce, resume and health, and du of /data (VolumeBytes).
// Anything else only a real engine runs.
func (e *Engine) Run(_ context.Context, id, _ string, cmd []string, stdout, _ io.Writer) (int, error) {
	what := strings.Join(cmd, " ")
	return 0, e.read("Run", func(h *Host) error {
		_, c := h.container(id)
		switch {
		case c == nil:
			return fmt.Errorf("Error response from daemon: No such container: %s", id)
		case c.State != "running":
			return fmt.Errorf("Error response from daemon: container %s is not running", c.ID)
		}
		switch what {
		case hb.Path + " quiesce", hb.Path + " resume", hb.Path + " health " + hb.AgentService:
			return nil
		case "du -sbx " + hb.Data:
			_, err := fmt.Fprintf(stdout, "%d\t%s\n", VolumeBytes, hb.Data)
			return err
		}
		return fmt.Errorf("running %s in %s: %w", what, id, ErrNotSupported)
	})
}

// ToolVersions would run the image to read its tools' versions.
func (e *Engine) ToolVersions(_ context.Context, image string) (map[string]string, error) {
	return nil, fmt.Errorf("reading the tools of %s: %w", image, ErrNotSupported)
}

// VolumeRoom would measure the engine's store of volumes.
func (e *Engine) VolumeRoom(_ context.Context, image, box string) (int64, error) {
	return 0, fmt.Errorf("measuring the room for %s's volumes with %s: %w", box, image, ErrNotSupported)
}

// RunHelper runs a helper container on a box's volumes as far as the fake
// tells them: the volumes it reads must be there, those it makes with
// labels must not; du measures VolumeBytes;
// any other command copies the content of the volume it reads into those
// it writes, made first if missing, as the engine makes a volume mounted.
func (e *Engine) RunHelper(_ context.Context, x engine.Helper) ([]byte, error) {
	var out []byte
	err := e.edit("RunHelper", func(h *Host) error {
		var from *Volume
		for _, m := range x.Mounts {
			_, v := h.volume(m.Volume)
			switch {
			case m.ReadOnly && v == nil:
				return fmt.Errorf("volume %s: %w", m.Volume, engine.ErrNoVolume)
			case m.ReadOnly:
				from = v
			case m.Labels != nil && v != nil:
				return fmt.Errorf("volume %s: %w", m.Volume, engine.ErrVolumeExists)
			case m.Labels != nil:
				h.Volumes = append(h.Volumes, &Volume{Name: m.Volume, Labels: maps.Clone(m.Labels)})
			}
		}
		if x.Cmd[0] == "du" {
			out = fmt.Appendf(nil, "%d\t/from\n", VolumeBytes)
			return nil
		}
		for _, m := range x.Mounts {
			if m.ReadOnly {
				continue
			}
			_, v := h.volume(m.Volume)
			if v == nil {
				v = &Volume{Name: m.Volume, Labels: map[string]string{}}
				h.Volumes = append(h.Volumes, v)
			}
			if from != nil {
				v.Content, v.Files = from.Content, slices.Clone(from.Files)
			}
		}
		return nil
	})
	return out, err
}

// SaveImage would stream an image out of the engine.
func (e *Engine) SaveImage(_ context.Context, ref string) (string, io.ReadCloser, error) {
	return "", nil, fmt.Errorf("saving image %s: %w", ref, ErrNotSupported)
}

// LoadImage would load another engine's image.
func (e *Engine) LoadImage(_ context.Context, ref, _ string, _ io.Reader) (int64, error) {
	return 0, fmt.Errorf("loading image %s: %w", ref, ErrNotSupported)
}

// PullImage would pull an image from a registry.
func (e *Engine) PullImage(_ context.Context, ref, _ string) error {
	return fmt.Errorf("pulling image %s: %w", ref, ErrNotSupported)
}

func merged(maps_ ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps_ {
		maps.Copy(out, m)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// CreateLeaseMark makes lease marker m as a container never started, as
// docker.Engine.CreateLeaseMark does: a name taken is refused. The claim
// of a box with a rival (SetRival) finds the rival's made just before.
func (e *Engine) CreateLeaseMark(_ context.Context, image string, m engine.LeaseMark) (string, error) {
	var id string
	err := e.edit("CreateLeaseMark", func(h *Host) error {
		if holder, ok := h.Rivals[m.Box]; ok && m.Kind == engine.LeaseClaim {
			delete(h.Rivals, m.Box)
			rival := m
			rival.Holder, rival.Lease, rival.Expires = holder, "rival-"+m.Box, time.Now().Add(time.Hour).UTC().Truncate(time.Second)
			// Docker takes a name before it lists the container, once its
			// layer is made: the loser's next look may miss the winner.
			h.Containers = append(h.Containers, &Container{ID: h.newID(e.host), Name: m.Name, Image: image, Labels: docker.LeaseLabels(rival),
				State: "created", Networks: map[string]string{}, Unlisted: 1})
		}
		if _, taken := h.container(m.Name); taken != nil {
			return fmt.Errorf("%s: %w", m.Name, engine.ErrLeaseTaken)
		}
		id = h.newID(e.host)
		h.Containers = append(h.Containers, &Container{ID: id, Name: m.Name, Image: image, Labels: docker.LeaseLabels(m),
			State: "created", Networks: map[string]string{}})
		return nil
	})
	return id, err
}
