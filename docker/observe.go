package docker

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"golang.org/x/sync/errgroup"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
)

// parallelCalls is how many of Observe's calls run at once. Over ssh every
// new connection is an ssh session and a docker CLI started on the remote,
// which costs far more than the calls: there they run one after another on
// the connection Connect opened. Elsewhere they run all at once.
func (e *Engine) parallelCalls() int {
	if strings.HasPrefix(e.Endpoint.URL, "ssh://") {
		return 1
	}
	return -1
}

// Observe takes one snapshot of the engine: three list calls (containers,
// volumes, networks) however many boxes there are, plus one inspect per image
// asked about (whether the engine has it, and its size). The machine's CPUs
// and memory and the engine's runtimes come from docker info, read with the
// lists the first time.
func (e *Engine) Observe(ctx context.Context, images ...string) (*engine.Observed, error) {
	var info engineInfo
	l, err := e.list(ctx, images, &info)
	if err != nil {
		return nil, e.observing(err)
	}
	o := l.Observed(e.Host)
	o.CPUs, o.Memory, o.Runtimes = info.cpus, info.memory, info.runtimes
	if err := e.inspectTroubled(ctx, o.Containers, l.statuses()); err != nil {
		return nil, e.observing(err)
	}
	o.Sort()
	return o, nil
}

// ObservePool observes pool of fleet alone (engine.PoolObserver): one
// list, of the containers labelled with both, read as Observe reads them,
// troubled ones inspected; no volumes, networks, images or docker info.
func (e *Engine) ObservePool(ctx context.Context, fleet, pool string) (*engine.Observed, error) {
	labels := filters.NewArgs(filters.Arg("label", compose.FleetLabel+"="+fleet), filters.Arg("label", compose.PoolLabel+"="+pool))
	cs, err := e.api.ContainerList(ctx, container.ListOptions{All: true, Filters: labels})
	if err != nil {
		return nil, e.observing(err)
	}
	l := Listing{Containers: cs}
	o := l.Observed(e.Host)
	if err := e.inspectTroubled(ctx, o.Containers, l.statuses()); err != nil {
		return nil, e.observing(err)
	}
	o.Sort()
	return o, nil
}

// observing is Observe's error err: an engine gone is engine.ErrUnreachable,
// whose message names the host already.
func (e *Engine) observing(err error) error {
	if Unreachable(err) {
		return e.lost(err)
	}
	return fmt.Errorf("observing %s: %w", e.describe(), err)
}

// Listing is what Observe's calls return, before it is read: what a test
// engine builds to be read exactly as Docker's lists are.
type Listing struct {
	Containers []container.Summary
	Volumes    []*volume.Volume
	Networks   []network.Summary
	// Images are the images asked about; Sizes[id] is the size of each
	// the engine has.
	Images []string
	Sizes  map[string]int64
}

// statuses are the status texts of the listed containers, by ID.
func (l Listing) statuses() map[string]string {
	out := make(map[string]string, len(l.Containers))
	for _, c := range l.Containers {
		out[c.ID] = c.Status
	}
	return out
}

// list makes Observe's calls, at once where the endpoint allows, and
// reads docker info into info (once for the engine's life: readInfo).
func (e *Engine) list(ctx context.Context, images []string, info *engineInfo) (Listing, error) {
	var (
		l       = Listing{Images: images, Sizes: map[string]int64{}}
		volumes volume.ListResponse
		present = make([]bool, len(images))
		sizes   = make([]int64, len(images))
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(e.parallelCalls())
	g.Go(func() (err error) {
		*info, err = e.readInfo(gctx)
		return err
	})
	g.Go(func() (err error) {
		l.Containers, err = e.api.ContainerList(gctx, container.ListOptions{All: true})
		return err
	})
	g.Go(func() (err error) {
		volumes, err = e.api.VolumeList(gctx, volume.ListOptions{})
		return err
	})
	g.Go(func() (err error) {
		l.Networks, err = e.api.NetworkList(gctx, network.ListOptions{})
		return err
	})
	for i, id := range images {
		g.Go(func() error {
			img, err := e.api.ImageInspect(gctx, id)
			if IsNotFound(err) {
				return nil
			}
			present[i], sizes[i] = err == nil, img.Size
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return Listing{}, err
	}
	l.Volumes = volumes.Volumes
	for i, id := range images {
		if present[i] {
			l.Sizes[id] = sizes[i]
		}
	}
	return l, nil
}

// Observed reads the listing of host's engine as boxes sees it: each
// managed container, volume and network with its box, snapshots apart, and
// the names of everything else.
func (l Listing) Observed(host string) *engine.Observed {
	o := &engine.Observed{
		Host: host,
		Unmanaged: engine.Unmanaged{
			Containers: map[string]bool{},
			Volumes:    map[string]bool{},
			Networks:   map[string]bool{},
		},
		Images:     map[string]bool{},
		ImageSizes: map[string]int64{},
	}
	for _, id := range l.Images {
		size, ok := l.Sizes[id]
		o.Images[id] = ok
		if ok {
			o.ImageSizes[id] = size
		}
	}
	writing := map[string]bool{} // snapshot volumes a one-off container is writing
	for _, c := range l.Containers {
		name := strings.TrimPrefix(firstOr(c.Names, c.ID), "/")
		if kind := c.Labels[compose.LeaseLabel]; kind != "" {
			o.LeaseMarks = append(o.LeaseMarks, compose.LeaseMarkOf(c.ID, name, c.Labels))
			continue
		}
		box, ok := managedBox(c.Labels)
		if label := c.Labels[compose.SnapshotLabel]; ok && label != "" && c.Labels[compose.OneOffLabel] != "" {
			writing[compose.SnapshotVolumeName(box, label)] = true
		}
		// A one-off container is no part of its box: it runs under the
		// box's lock and is removed after.
		if !ok || c.Labels[compose.OneOffLabel] != "" {
			o.Unmanaged.Containers[name] = true
			continue
		}
		o.Containers = append(o.Containers, observedContainer(c, name, box))
	}
	for _, v := range l.Volumes {
		box, ok := managedBox(v.Labels)
		if !ok {
			o.Unmanaged.Volumes[v.Name] = true
			continue
		}
		if label := v.Labels[compose.SnapshotLabel]; label != "" {
			o.Snapshots = append(o.Snapshots, compose.SnapshotOf(v.Name, box, label, v.Labels, writing[v.Name]))
			continue
		}
		// Unreadable, the time stays zero: every backup of the box is shown.
		created, _ := time.Parse(time.RFC3339Nano, v.CreatedAt)
		o.Volumes = append(o.Volumes, engine.Volume{Name: v.Name, Box: box, Fleet: v.Labels[compose.FleetLabel], Labels: v.Labels, Size: -1, Created: created})
	}
	for _, n := range l.Networks {
		box, ok := managedBox(n.Labels)
		if !ok {
			o.Unmanaged.Networks[n.Name] = true
			continue
		}
		o.Networks = append(o.Networks, engine.Network{ID: n.ID, Name: n.Name, Box: box, Fleet: n.Labels[compose.FleetLabel], Labels: n.Labels})
	}
	return o
}

// observedContainer is box's container c, named name, as the planner sees
// it: its state, its config hash, networks, volume mounts and published
// ports.
func observedContainer(c container.Summary, name, box string) engine.Container {
	oc := engine.Container{
		ID:         c.ID,
		Name:       name,
		Box:        box,
		Service:    c.Labels["com.docker.compose.service"],
		Image:      c.ImageID,
		Fleet:      c.Labels[compose.FleetLabel],
		State:      stateOf(c.State),
		ExitCode:   exitCode(c.Status),
		Health:     healthOf(c.Status),
		ConfigHash: c.Labels["com.docker.compose.config-hash"],
		Labels:     c.Labels,
	}
	if c.NetworkSettings != nil {
		for n, ep := range c.NetworkSettings.Networks {
			oc.Networks = append(oc.Networks, n)
			if ep != nil && ep.NetworkID != "" {
				oc.NetworkIDs = append(oc.NetworkIDs, ep.NetworkID)
			}
		}
		sort.Strings(oc.Networks)
		sort.Strings(oc.NetworkIDs)
	}
	for _, m := range c.Mounts {
		if m.Type == mount.TypeVolume && m.Name != "" {
			oc.Mounts = append(oc.Mounts, engine.Mount{Volume: m.Name, Destination: m.Destination})
		}
	}
	for _, p := range c.Ports {
		if p.PublicPort == 0 {
			continue
		}
		oc.Ports = append(oc.Ports, engine.Port{HostIP: p.IP, HostPort: int(p.PublicPort), ContainerPort: int(p.PrivatePort)})
	}
	return oc
}

// stateOf is Docker's container state in boxes' terms; one boxes does not
// know reads as dead, which a plan only removes.
func stateOf(s container.ContainerState) engine.State {
	switch st := engine.State(s); st {
	case engine.Created, engine.Running, engine.Paused, engine.Restarting, engine.Exited, engine.Removing, engine.Dead:
		return st
	}
	return engine.Dead
}

// healthOf reads a container's health from its list status: "Up 2 minutes
// (healthy)", "(unhealthy)", "(health: starting)".
func healthOf(status string) engine.Health {
	switch {
	case strings.HasSuffix(status, "(healthy)"):
		return engine.Healthy
	case strings.HasSuffix(status, "(unhealthy)"):
		return engine.Unhealthy
	case strings.HasSuffix(status, "(health: starting)"):
		return engine.HealthStarting
	}
	return engine.NoHealth
}

// inspectTroubled reads the restart count, OOM flag and start error of the
// containers that are restarting or exited with a failure: the list gives
// only the state and the status text (status, by container ID). A healthy
// engine costs no call here.
func (e *Engine) inspectTroubled(ctx context.Context, cs []engine.Container, status map[string]string) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := range cs {
		c := &cs[i]
		justStarted := c.State == engine.Running && upSeconds(status[c.ID]) < restartReset
		if !reconcile.Troubled(*c) && !justStarted {
			continue
		}
		g.Go(func() error {
			info, err := e.api.ContainerInspect(gctx, c.ID)
			if IsNotFound(err) {
				return nil // removed since the list; the next plan sees it gone
			}
			if err != nil {
				return err
			}
			c.Restarts = info.RestartCount
			if info.State == nil {
				return nil
			}
			c.OOMKilled = info.State.OOMKilled
			c.Error = info.State.Error
			c.ExitCode = info.State.ExitCode
			// Between two restarts of a crash loop the container runs for an
			// instant. Docker's restart manager counts it as looping until it
			// has run restartReset; so does the plan, or it would see a loop
			// only when it happens to look between two attempts.
			if started, err := time.Parse(time.RFC3339Nano, info.State.StartedAt); err == nil &&
				info.State.Running && c.Restarts > 0 && time.Since(started) < restartReset {
				c.State = engine.Restarting
				c.ExitCode = 0 // the last exit code is not kept while it runs
			}
			return nil
		})
	}
	return g.Wait()
}

// restartReset is how long a restarted container must run for Docker to
// stop counting it as crash-looping (its restart backoff resets).
const restartReset = 10 * time.Second

var statusUp = regexp.MustCompile(`^Up (Less than a second|([0-9]+) seconds?)`)

// upSeconds reads how long a running container has been up from its list
// status ("Up 3 seconds", "Up Less than a second"); a minute or more is
// reported as an hour, which is all the plan needs to know.
func upSeconds(status string) time.Duration {
	m := statusUp.FindStringSubmatch(status)
	if m == nil {
		return time.Hour
	}
	n, _ := strconv.Atoi(m[2])
	return time.Duration(n) * time.Second
}

var statusExit = regexp.MustCompile(`^(?:Exited|Restarting) \((-?[0-9]+)\)`)

// exitCode reads the exit code from a list status like "Exited (127) 3 seconds ago".
func exitCode(status string) int {
	m := statusExit.FindStringSubmatch(status)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// ContainerEnv reads a container's configured environment (token recovery).
func (e *Engine) ContainerEnv(ctx context.Context, id string) ([]string, error) {
	c, err := e.api.ContainerInspect(ctx, id)
	if err != nil {
		return nil, err
	}
	if c.Config == nil {
		return nil, nil
	}
	return c.Config.Env, nil
}

// ContainerRuntime reads the OCI runtime a container runs under (runc,
// runsc): the list does not carry it.
func (e *Engine) ContainerRuntime(ctx context.Context, id string) (string, error) {
	c, err := e.api.ContainerInspect(ctx, id)
	if err != nil {
		return "", err
	}
	if c.HostConfig == nil {
		return "", nil
	}
	return c.HostConfig.Runtime, nil
}

func (e *Engine) describe() string {
	if e.Host == "" {
		return "the local engine"
	}
	return fmt.Sprintf("host %q", e.Host)
}

func managedBox(labels map[string]string) (string, bool) {
	if labels[compose.ManagedLabel] != "1" {
		return "", false
	}
	box := labels[compose.BoxLabel]
	return box, box != ""
}

func firstOr(names []string, fallback string) string {
	if len(names) > 0 {
		return names[0]
	}
	return fallback
}
