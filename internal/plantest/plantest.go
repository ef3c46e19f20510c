// Package plantest holds the fixtures the planner's and the applier's tests
// share: a box, a fleet, an image and what an engine shows of a box made
// from them.
package plantest

import (
	"path/filepath"
	"testing"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/spec"
)

// The image, the previous image, the token, the path of boxes.yaml and the
// fleet the fixtures use.
const (
	Image      = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	OldImage   = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	Token      = "tok-0123456789abcdef0123456789abcdef"
	ConfigPath = "/srv/boxes/boxes.yaml"
	Fleet      = "team-a"
	// AutoPort is the port Docker picked for a running executor with port: auto.
	AutoPort = 49200
	GiB      = 1 << 30
)

// Box is a running box named name with settings every test can rely on.
func Box(name string) spec.Box {
	return spec.Box{
		Name:  name,
		State: spec.Running,
		Settings: spec.Settings{
			CPUs:     2,
			Memory:   4 * GiB,
			Executor: spec.Executor{Bind: "127.0.0.1"},
			Env:      map[string]string{"TZ": "UTC"},
		},
	}
}

// Config is a fleet of boxes at ConfigPath.
func Config(boxes ...spec.Box) *spec.Config {
	return &spec.Config{Path: ConfigPath, Version: 1, Fleet: Fleet, Boxes: boxes}
}

// HashesFor is what the planner computes for b: the same compose.Input.
func HashesFor(t testing.TB, b spec.Box, image string, hostPort int) map[string]string {
	t.Helper()
	p, err := compose.Project(compose.Input{
		Box:        b,
		Image:      image,
		Token:      Token,
		HostPort:   hostPort,
		WorkDir:    filepath.Dir(ConfigPath),
		ConfigFile: ConfigPath,
	})
	if err != nil {
		t.Fatalf("compose.Project: %v", err)
	}
	h, err := compose.ServiceHashes(p)
	if err != nil {
		t.Fatalf("ServiceHashes: %v", err)
	}
	return h
}

// ObserveBox adds every resource of b, as created from image with hashes, to
// o, the way Docker lists them: in b's fleet (Fleet when b names none),
// connected to the box's network, a running executor published on hostPort
// (AutoPort when 0 and b's port is auto).
func ObserveBox(t testing.TB, o *engine.Observed, b spec.Box, image string, state engine.State, hostPort int) {
	t.Helper()
	fleet := b.Fleet
	if fleet == "" {
		fleet = Fleet
	}
	hashes := HashesFor(t, b, image, 0)
	if hostPort == 0 && state == engine.Running {
		hostPort = b.Executor.Port
		if hostPort == 0 {
			hostPort = AutoPort
		}
	}
	for _, svc := range compose.Services {
		labels := compose.Labels(b.Name)
		labels[compose.SettingsLabel] = compose.SettingsJSON(b, svc)
		if svc == compose.GateService {
			labels[compose.CredentialsLabel] = "{}"
			labels[compose.ClosedLabel] = ""
		}
		c := engine.Container{
			ID:         "id-" + b.Name + "-" + svc,
			Name:       compose.ContainerName(b.Name, svc),
			Box:        b.Name,
			Service:    svc,
			Image:      image,
			Fleet:      fleet,
			State:      state,
			ConfigHash: hashes[svc],
			Labels:     labels,
			Networks:   compose.ServiceNetworks(b.Name, b.Executor.Door, svc),
		}
		if svc != compose.GateService {
			c.Mounts = []engine.Mount{{Volume: compose.VolumeName(b.Name, VolumeOf(svc)), Destination: "/data"}}
		}
		if svc == compose.PortService(b) && hostPort != 0 {
			c.Ports = []engine.Port{{HostIP: "127.0.0.1", HostPort: hostPort, ContainerPort: compose.ExecutorPort}}
		}
		o.Containers = append(o.Containers, c)
	}
	for _, v := range []string{compose.AgentVolume, compose.ExecutorVolume} {
		o.Volumes = append(o.Volumes, engine.Volume{Name: compose.VolumeName(b.Name, v), Box: b.Name, Fleet: fleet, Labels: compose.Labels(b.Name), Size: -1})
	}
	o.Networks = append(o.Networks, engine.Network{ID: "net-" + b.Name, Name: compose.NetworkName(b.Name), Box: b.Name, Fleet: fleet, Labels: compose.Labels(b.Name)},
		engine.Network{ID: "inside-" + b.Name, Name: compose.InsideNetworkName(b.Name), Box: b.Name, Fleet: fleet, Labels: compose.Labels(b.Name)})
	if b.Executor.Door {
		o.Networks = append(o.Networks, engine.Network{ID: "exec-" + b.Name, Name: compose.ExecutorNetworkName(b.Name), Box: b.Name, Fleet: fleet, Labels: compose.Labels(b.Name)})
	}
}

// VolumeOf is the volume service mounts at /data.
func VolumeOf(service string) string {
	if service == compose.AgentService {
		return compose.AgentVolume
	}
	return compose.ExecutorVolume
}

// EmptyObserved is an engine with Image and nothing else.
func EmptyObserved() *engine.Observed {
	return &engine.Observed{Images: map[string]bool{Image: true}}
}
