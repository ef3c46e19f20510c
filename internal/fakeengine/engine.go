//lint:file-ignore ST1005 errors here repeat the Docker daemon's own words, capitals and all, as boxes meets them

package fakeengine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

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

// The fake engine is what a workspace needs of a host, and observes a pool
// alone as a Docker engine does.
var (
	_ engine.Engine       = (*Engine)(nil)
	_ engine.PoolObserver = (*Engine)(nil)
)

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
	l, err := e.listing("Observe", images, nil)
	if err != nil {
		return nil, err
	}
	o := l.Observed(e.host)
	o.CPUs, o.Memory, o.Runtimes = 4, 16<<30, []string{"runc"}
	o.Sort()
	return o, nil
}

// ObservePool is Observe narrowed as docker.Engine's is: the containers
// labelled with fleet and pool alone.
func (e *Engine) ObservePool(_ context.Context, fleet, pool string) (*engine.Observed, error) {
	l, err := e.listing("ObservePool", nil, func(c *Container) bool {
		return c.Labels[compose.FleetLabel] == fleet && c.Labels[compose.PoolLabel] == pool
	})
	if err != nil {
		return nil, err
	}
	o := l.Observed(e.host)
	o.Sort()
	return o, nil
}

// listing is what the engine lists, as the engine call named call: the
// images of images it has and every container, volume and network; only
// the containers keep says, when keep is not nil.
func (e *Engine) listing(call string, images []string, keep func(c *Container) bool) (docker.Listing, error) {
	l := docker.Listing{Images: images, Sizes: map[string]int64{}}
	look := func(fn func(h *Host) error) error { return e.read(call, fn) }
	_ = e.peek(func(h *Host) error {
		for _, c := range h.Containers {
			if c.Unlisted > 0 && (keep == nil || keep(c)) {
				// This look counts down its Unlisted.
				look = func(fn func(h *Host) error) error { return e.edit(call, fn) }
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
			if keep != nil && !keep(c) {
				continue
			}
			if c.Unlisted > 0 {
				c.Unlisted--
				continue
			}
			l.Containers = append(l.Containers, summary(c))
		}
		if keep != nil {
			return nil
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
		return docker.Listing{}, fmt.Errorf("observing %s: %w", e.describe(), err)
	}
	return l, nil
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

// VolumeSizes sizes each volume a running container of o mounts at
// VolumeBytes; the others are unread, with docker.Engine's reasons.
func (e *Engine) VolumeSizes(_ context.Context, o *engine.Observed, volumes []string) map[string]engine.VolumeSize {
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
	out := make(map[string]engine.VolumeSize, len(volumes))
	for _, v := range volumes {
		switch {
		case running[v]:
			out[v] = engine.VolumeSize{Bytes: VolumeBytes}
		case stopped[v]:
			out[v] = engine.VolumeSize{Unread: "the box is not running"}
		default:
			out[v] = engine.VolumeSize{Unread: "no container mounts it"}
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
		out = machineAddresses(h, e.endpoint)
		return nil
	})
	return out
}

// MachineAddresses are the addresses of the machine of host h's engine, as
// its Engine's MachineAddresses, without connecting: a host that is down
// has them too, as docker.Connector finds them from the address alone.
func (c *Connector) MachineAddresses(h spec.Host) ([]netip.Addr, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.load(); err != nil {
		return nil, err
	}
	host := c.state.Hosts[h.Name]
	if host == nil {
		host = &Host{}
	}
	return machineAddresses(host, h.Docker), nil
}

// machineAddresses are those a test gave host h's machine (Host.Machine),
// and the address of a tcp:// or ssh:// endpoint given as one.
func machineAddresses(h *Host, endpoint string) []netip.Addr {
	var out []netip.Addr
	for _, s := range h.Machine {
		if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, a)
		}
	}
	u, err := url.Parse(endpoint)
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
