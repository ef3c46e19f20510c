package cli_test

// The raw engine API baseline of BenchmarkApply: what a box is, made with
// plain API requests. The requests are derived from the very compose
// project boxes generates for the box (compose.Project), field by field for
// the fields boxes sets; TestRawBoxCarriesEveryField fails when the
// generated services set a field this conversion does not carry, so the
// baseline cannot drift from what a box is.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/versions"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/docker/go-connections/nat"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/mcp"
)

// rawSpec is one box's compose project as engine API requests.
type rawSpec struct {
	networks   []rawNetwork
	volumes    []volume.CreateOptions
	containers []rawContainer
}

type rawNetwork struct {
	name string
	opts network.CreateOptions
}

// rawContainer is one service's container: created on its first network
// (net), then connected to the others (more) before it starts, as compose
// does on an engine older than API 1.44; on a newer one all go in the create.
type rawContainer struct {
	service string
	name    string
	config  *container.Config
	host    *container.HostConfig
	net     *network.NetworkingConfig
	more    map[string]*network.EndpointSettings
}

// rawCarried are the service fields (compose's own keys) that rawSpecOf
// turns into the container's requests, each with how a test sees it there.
var rawCarried = map[string]func(s types.ServiceConfig, c rawContainer) bool{
	"hostname": func(s types.ServiceConfig, c rawContainer) bool { return c.config.Hostname == s.Hostname },
	"image":    func(s types.ServiceConfig, c rawContainer) bool { return c.config.Image == s.Image },
	"entrypoint": func(s types.ServiceConfig, c rawContainer) bool {
		return slices.Equal([]string(c.config.Entrypoint), []string(s.Entrypoint))
	},
	"command": func(s types.ServiceConfig, c rawContainer) bool {
		return (c.config.Cmd == nil) == (s.Command == nil) && slices.Equal([]string(c.config.Cmd), []string(s.Command))
	},
	"user": func(s types.ServiceConfig, c rawContainer) bool { return c.config.User == s.User },
	"environment": func(s types.ServiceConfig, c rawContainer) bool {
		return len(c.config.Env) == len(s.Environment) && len(s.Environment) > 0
	},
	"labels": func(s types.ServiceConfig, c rawContainer) bool {
		for k, v := range s.Labels {
			if c.config.Labels[k] != v {
				return false
			}
		}
		return len(s.Labels) > 0
	},
	"healthcheck": func(s types.ServiceConfig, c rawContainer) bool {
		h := c.config.Healthcheck
		return h != nil && slices.Equal([]string(h.Test), []string(s.HealthCheck.Test)) && h.Interval > 0 && h.Timeout > 0 && h.StartPeriod > 0 && h.Retries > 0
	},
	"stop_grace_period": func(s types.ServiceConfig, c rawContainer) bool {
		return c.config.StopTimeout != nil && *c.config.StopTimeout == int(time.Duration(*s.StopGracePeriod).Seconds())
	},
	"ports": func(s types.ServiceConfig, c rawContainer) bool {
		return len(c.config.ExposedPorts) == len(s.Ports) && len(c.host.PortBindings) == len(s.Ports)
	},
	"init": func(s types.ServiceConfig, c rawContainer) bool { return c.host.Init != nil && *c.host.Init == *s.Init },
	"restart": func(s types.ServiceConfig, c rawContainer) bool {
		return string(c.host.RestartPolicy.Name) == s.Restart
	},
	"sysctls": func(s types.ServiceConfig, c rawContainer) bool {
		return maps.Equal(c.host.Sysctls, map[string]string(s.Sysctls))
	},
	"volumes":   func(s types.ServiceConfig, c rawContainer) bool { return len(c.host.Mounts) == len(s.Volumes) },
	"cap_drop":  func(s types.ServiceConfig, c rawContainer) bool { return slices.Equal(c.host.CapDrop, s.CapDrop) },
	"read_only": func(s types.ServiceConfig, c rawContainer) bool { return c.host.ReadonlyRootfs == s.ReadOnly },
	"security_opt": func(s types.ServiceConfig, c rawContainer) bool {
		return slices.Equal(c.host.SecurityOpt, s.SecurityOpt)
	},
	"dns":       func(s types.ServiceConfig, c rawContainer) bool { return slices.Equal(c.host.DNS, s.DNS) },
	"runtime":   func(s types.ServiceConfig, c rawContainer) bool { return c.host.Runtime == s.Runtime },
	"cpus":      func(s types.ServiceConfig, c rawContainer) bool { return c.host.NanoCPUs == int64(s.CPUS*1e9) },
	"mem_limit": func(s types.ServiceConfig, c rawContainer) bool { return c.host.Memory == int64(s.MemLimit) },
	"networks": func(s types.ServiceConfig, c rawContainer) bool {
		n := len(c.net.EndpointsConfig) + len(c.more)
		for _, ep := range c.net.EndpointsConfig {
			if !slices.Contains(ep.Aliases, s.Name) {
				return false
			}
		}
		return n == len(s.Networks) && c.host.NetworkMode != ""
	},
}

// rawLeftOut are the service fields the requests leave out, and why.
var rawLeftOut = map[string]string{
	"pull_policy": "never: the image is the engine's own, nothing is pulled",
	"depends_on":  "boxes starts the three containers at once (docker's Engine.Start); the baseline creates and starts them at once too",
}

// rawNetworkCarried and rawVolumeCarried are the network and volume fields
// carried into their creates.
var (
	rawNetworkCarried = []string{"name", "internal", "driver_opts", "labels", "driver", "ipam"}
	rawVolumeCarried  = []string{"name", "labels", "driver"}
)

// rawSpecOf turns project p into API requests for an engine speaking
// apiVersion.
func rawSpecOf(p *types.Project, apiVersion string) (rawSpec, error) {
	var r rawSpec
	for _, key := range slices.Sorted(maps.Keys(p.Networks)) {
		n := p.Networks[key]
		labels := mergeLabels(n.Labels, n.CustomLabels)
		labels["com.docker.compose.network"] = key
		labels[compose.ComposeProjectLabel] = p.Name
		r.networks = append(r.networks, rawNetwork{name: n.Name, opts: network.CreateOptions{
			Driver: n.Driver, Internal: n.Internal, Options: n.DriverOpts, Labels: labels,
		}})
	}
	for _, key := range slices.Sorted(maps.Keys(p.Volumes)) {
		v := p.Volumes[key]
		labels := mergeLabels(v.Labels, v.CustomLabels)
		labels["com.docker.compose.volume"] = key
		labels[compose.ComposeProjectLabel] = p.Name
		r.volumes = append(r.volumes, volume.CreateOptions{Name: v.Name, Driver: v.Driver, Labels: labels})
	}
	for _, name := range p.ServiceNames() {
		c, err := rawContainerOf(p, p.Services[name], apiVersion)
		if err != nil {
			return rawSpec{}, fmt.Errorf("service %s: %w", name, err)
		}
		r.containers = append(r.containers, c)
	}
	return r, nil
}

func mergeLabels(ls ...types.Labels) map[string]string {
	out := map[string]string{}
	for _, l := range ls {
		maps.Copy(out, l)
	}
	return out
}

func rawContainerOf(p *types.Project, s types.ServiceConfig, apiVersion string) (rawContainer, error) {
	name := compose.ContainerName(strings.TrimPrefix(p.Name, compose.ProjectPrefix), s.Name)
	var env []string
	for _, k := range slices.Sorted(maps.Keys(s.Environment)) {
		if v := s.Environment[k]; v != nil {
			env = append(env, k+"="+*v)
		}
	}
	cfg := &container.Config{
		Hostname:   s.Hostname,
		User:       s.User,
		Image:      s.Image,
		Entrypoint: []string(s.Entrypoint),
		Cmd:        []string(s.Command),
		Env:        env,
		Labels:     mergeLabels(s.Labels, s.CustomLabels),
	}
	if h := s.HealthCheck; h != nil {
		cfg.Healthcheck = &container.HealthConfig{Test: []string(h.Test)}
		if h.Interval != nil {
			cfg.Healthcheck.Interval = time.Duration(*h.Interval)
		}
		if h.Timeout != nil {
			cfg.Healthcheck.Timeout = time.Duration(*h.Timeout)
		}
		if h.StartPeriod != nil {
			cfg.Healthcheck.StartPeriod = time.Duration(*h.StartPeriod)
		}
		if h.Retries != nil {
			cfg.Healthcheck.Retries = int(*h.Retries)
		}
	}
	if s.StopGracePeriod != nil {
		cfg.StopTimeout = new(int(time.Duration(*s.StopGracePeriod).Seconds()))
	}
	host := &container.HostConfig{
		Init:           s.Init,
		RestartPolicy:  container.RestartPolicy{Name: container.RestartPolicyMode(s.Restart)},
		Sysctls:        s.Sysctls,
		CapDrop:        s.CapDrop,
		SecurityOpt:    s.SecurityOpt,
		ReadonlyRootfs: s.ReadOnly,
		DNS:            s.DNS,
		Runtime:        s.Runtime,
		Resources:      container.Resources{NanoCPUs: int64(s.CPUS * 1e9), Memory: int64(s.MemLimit)},
	}
	for _, port := range s.Ports {
		proto := port.Protocol
		if proto == "" {
			proto = "tcp"
		}
		np, err := nat.NewPort(proto, strconv.Itoa(int(port.Target)))
		if err != nil {
			return rawContainer{}, err
		}
		if cfg.ExposedPorts == nil {
			cfg.ExposedPorts, host.PortBindings = nat.PortSet{}, nat.PortMap{}
		}
		cfg.ExposedPorts[np] = struct{}{}
		host.PortBindings[np] = append(host.PortBindings[np], nat.PortBinding{HostIP: port.HostIP, HostPort: port.Published})
	}
	for _, v := range s.Volumes {
		if v.Type != types.VolumeTypeVolume {
			return rawContainer{}, fmt.Errorf("a %s mount, which the baseline does not make", v.Type)
		}
		host.Mounts = append(host.Mounts, mount.Mount{Type: mount.TypeVolume, Source: p.Volumes[v.Source].Name, Target: v.Target, ReadOnly: v.ReadOnly})
	}
	c := rawContainer{service: s.Name, name: name, config: cfg, host: host, more: map[string]*network.EndpointSettings{}}
	nets := s.NetworksByPriority()
	if len(nets) == 0 {
		return rawContainer{}, fmt.Errorf("no network")
	}
	endpoint := func() *network.EndpointSettings {
		return &network.EndpointSettings{Aliases: []string{name, s.Name}}
	}
	primary := p.Networks[nets[0]].Name
	host.NetworkMode = container.NetworkMode(primary)
	c.net = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{primary: endpoint()}}
	for _, key := range nets[1:] {
		if versions.GreaterThanOrEqualTo(apiVersion, "1.44") {
			c.net.EndpointsConfig[p.Networks[key].Name] = endpoint()
		} else {
			c.more[p.Networks[key].Name] = endpoint()
		}
	}
	return c, nil
}

// setKeys are the keys of v's fields that are set, as compose spells them.
func setKeys(v any) ([]string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(m)), nil
}

// rawBoxesOf makes each box of projects with plain API requests, parallel
// boxes at a time (see rawBox).
func rawBoxesOf(ctx context.Context, api client.APIClient, projects []*types.Project, token string, parallel int) error {
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	errs := make([]error, len(projects))
	for i, p := range projects {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = rawFullBox(ctx, api, p, token)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// rawFullBox makes what box project p is: its two networks and its volumes
// at once, then its three containers at once, each connected to its second
// network, then all three started at once; then it waits, side by side, for
// what boxes apply waits for, polled as boxes polls (docker.PollAfter): the
// executor's answer to an authenticated MCP initialize on its published
// port, hb health agent passing in the agent (hb init done), and the gate's
// health command passing in the gate.
func rawFullBox(ctx context.Context, api client.APIClient, p *types.Project, token string) error {
	r, err := rawSpecOf(p, api.ClientVersion())
	if err != nil {
		return err
	}
	each := func(n int, fn func(i int) error) error {
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = fn(i) }()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	}
	err = each(len(r.networks)+len(r.volumes), func(i int) error {
		if i < len(r.networks) {
			_, err := api.NetworkCreate(ctx, r.networks[i].name, r.networks[i].opts)
			return err
		}
		_, err := api.VolumeCreate(ctx, r.volumes[i-len(r.networks)])
		return err
	})
	if err != nil {
		return err
	}
	ids := make([]string, len(r.containers))
	err = each(len(r.containers), func(i int) error {
		c := r.containers[i]
		made, err := api.ContainerCreate(ctx, c.config, c.host, c.net, nil, c.name)
		if err != nil {
			return err
		}
		ids[i] = made.ID
		for net, ep := range c.more {
			if err := api.NetworkConnect(ctx, net, made.ID, ep); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := each(len(ids), func(i int) error { return api.ContainerStart(ctx, ids[i], container.StartOptions{}) }); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, docker.ReadyTimeout)
	defer cancel()
	return each(len(ids), func(i int) error {
		switch r.containers[i].service {
		case compose.ExecutorService:
			return rawWaitMCP(ctx, api, ids[i], token)
		case compose.AgentService:
			return rawWaitExec(ctx, api, ids[i], "root", []string{compose.HB, "health", compose.AgentService})
		case compose.GateService:
			return rawWaitExec(ctx, api, ids[i], "", []string{compose.GateBinary, "gate", "--health"})
		}
		return fmt.Errorf("service %s: no readiness to wait for", r.containers[i].service)
	})
}

// rawWaitMCP waits for the executor's answer to an authenticated MCP
// initialize on its published port.
func rawWaitMCP(ctx context.Context, api client.APIClient, id, token string) error {
	info, err := api.ContainerInspect(ctx, id)
	if err != nil {
		return err
	}
	bindings := info.NetworkSettings.Ports[nat.Port(fmt.Sprintf("%d/tcp", compose.ExecutorPort))]
	if len(bindings) == 0 {
		return fmt.Errorf("%s: the executor publishes no port", info.Name)
	}
	url := fmt.Sprintf("http://127.0.0.1:%s/mcp", bindings[0].HostPort)
	for try := 0; ; try++ {
		err := mcp.Initialize(ctx, url, token)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: no MCP answer at %s: %w", info.Name, url, err)
		case <-time.After(docker.PollAfter(try)):
		}
	}
}

// rawWaitExec waits until cmd, run in container id as user, exits 0.
func rawWaitExec(ctx context.Context, api client.APIClient, id, user string, cmd []string) error {
	for try := 0; ; try++ {
		code, out, err := rawExec(ctx, api, id, user, cmd)
		if err == nil && code == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s in %.12s: exit %d, %v: %s", strings.Join(cmd, " "), id, code, err, out)
		case <-time.After(docker.PollAfter(try)):
		}
	}
}

func rawExec(ctx context.Context, api client.APIClient, id, user string, cmd []string) (int, string, error) {
	created, err := api.ContainerExecCreate(ctx, id, container.ExecOptions{User: user, Cmd: cmd, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return -1, "", err
	}
	att, err := api.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return -1, "", err
	}
	defer att.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, att.Reader); err != nil {
		return -1, "", err
	}
	inspect, err := api.ContainerExecInspect(ctx, created.ID)
	if err != nil {
		return -1, "", err
	}
	return inspect.ExitCode, strings.TrimSpace(out.String()), nil
}
