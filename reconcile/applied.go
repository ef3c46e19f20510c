package reconcile

import (
	"fmt"
	"path/filepath"
	"sort"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/spec"
)

// Applied is the snapshot the engines would give right after cfg had been
// applied with image, every box's token being token: per host, the containers
// compose makes for each declared box (with its labels and config hash, running
// or exited as declared), its two volumes and its network. Sizes are unknown
// and no port is published, as for a stopped box. It is what `boxes diff`
// plans against in place of engines it cannot see.
//
// The config hashes are those of cfg's boxes built at path, so that a plan of
// another config at the same path and with the same token differs from them
// exactly where compose would recreate. A nil cfg is an empty fleet.
func Applied(cfg *spec.Config, image, token, path string) (map[string]*engine.Observed, error) {
	out := map[string]*engine.Observed{"": {Host: "", Images: map[string]bool{}}}
	if cfg == nil {
		return out, nil
	}
	for name := range cfg.Hosts {
		out[name] = &engine.Observed{Host: name, Images: map[string]bool{}}
	}
	for _, b := range cfg.Boxes {
		o := out[b.Host]
		if o == nil {
			o = &engine.Observed{Host: b.Host, Images: map[string]bool{}}
			out[b.Host] = o
		}
		if err := appliedBox(o, cfg.Fleet, b, image, token, path); err != nil {
			return nil, err
		}
	}
	for _, o := range out {
		o.Sort()
	}
	return out, nil
}

// health is what a box's healthcheck says once apply is done with it.
func health(s engine.State) engine.Health {
	if s == engine.Running {
		return engine.Healthy
	}
	return engine.NoHealth
}

func appliedBox(o *engine.Observed, fleet string, b spec.Box, image, token, path string) error {
	project, err := compose.Project(compose.Input{
		Box:        b,
		Image:      image,
		Token:      token,
		WorkDir:    filepath.Dir(path),
		ConfigFile: path,
	})
	if err != nil {
		return err
	}
	hashes, err := compose.ServiceHashes(project)
	if err != nil {
		return err
	}
	// apply creates a box declared stopped without starting it.
	state := engine.Running
	if b.State == spec.Stopped {
		state = engine.Created
	}
	services := make([]string, 0, len(project.Services))
	for s := range project.Services {
		services = append(services, s)
	}
	sort.Strings(services)
	for _, s := range services {
		svc := project.Services[s]
		labels := map[string]string{}
		for k, v := range svc.Labels {
			labels[k] = v
		}
		for k, v := range svc.CustomLabels {
			labels[k] = v
		}
		labels["com.docker.compose.config-hash"] = hashes[s]
		name := compose.ContainerName(b.Name, s)
		var ports []engine.Port
		if s == compose.PortService(b) && state == engine.Running {
			// A port: auto is whatever Docker chose: 0 stands for it, as the
			// hashes above were made with it.
			ports = []engine.Port{{HostIP: b.Executor.Bind, HostPort: b.Executor.Port, ContainerPort: compose.ExecutorPort}}
		}
		o.Containers = append(o.Containers, engine.Container{
			Fleet:      fleet,
			Networks:   compose.ServiceNetworks(b.Name, b.Executor.Door, s),
			Ports:      ports,
			ID:         "", // unknown without the engine
			Name:       name,
			Box:        b.Name,
			Service:    s,
			Image:      image,
			State:      state,
			Health:     health(state),
			ConfigHash: hashes[s],
			Labels:     labels,
		})
	}
	for key, v := range project.Volumes {
		o.Volumes = append(o.Volumes, engine.Volume{Fleet: fleet, Name: compose.VolumeName(b.Name, key), Box: b.Name, Labels: copyLabels(v.Labels), Size: -1})
	}
	for key, n := range project.Networks {
		name := compose.NetworkName(b.Name)
		switch key {
		case compose.Network:
		case compose.InsideNetwork:
			name = compose.InsideNetworkName(b.Name)
		case compose.ExecutorNetwork:
			name = compose.ExecutorNetworkName(b.Name)
		default:
			return fmt.Errorf("box %s: unexpected network %s in its project", b.Name, key)
		}
		o.Networks = append(o.Networks, engine.Network{Fleet: fleet, Name: name, Box: b.Name, Labels: copyLabels(n.Labels)})
	}
	return nil
}

func copyLabels(l map[string]string) map[string]string {
	out := make(map[string]string, len(l))
	for k, v := range l {
		out[k] = v
	}
	return out
}
