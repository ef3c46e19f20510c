// Package fakeengine is an in-memory stand-in for Docker engines, for
// tests of the command line: it implements engine.Engine well enough
// that plan, apply, rm, ls, start and stop cannot tell it from Docker, and
// reports what it holds with the very labels, names and shapes
// docker.Engine.Observe does. Its state lives in one JSON file, loaded when
// a host is connected and rewritten after each change, so that it outlasts
// one boxes command and the next one sees what the last one did; or, for a
// fleet of thousands of boxes simulated in one process, in memory alone.
// Its hosts may be slow (each call waits) or down (connecting fails), and
// it counts the calls made to each.
//
// What is streamed into a volume (CopyTo) is kept as its Files and streams
// back out (CopyFrom); helper containers copy a volume's Content and Files
// into another (snapshots, reverts, forks). A running container answers the
// execs that freeze a box (hb quiesce, resume and health, du of /data), and
// Exec runs a few commands on the volumes' files (see inside.go), enough
// for the engine contract's suite (internal/conformance). Connector.Gone
// makes a host unreachable, also in the middle of a call. What only a real
// engine does (reading an image's tools or the room for volumes, streaming
// images, any other command) fails with ErrNotSupported.
package fakeengine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/hermes-box/boxes/compose"
)

// ErrNotSupported is what the fake engine answers where only a real engine
// can do the work.
var ErrNotSupported = errors.New("not supported by the fake engine")

// Created is when the fake engine says it made every volume: a fixed time,
// so that what depends on it prints the same in every run.
var Created = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// ImageSize is the size of every image a fake engine holds.
const ImageSize = 700 << 20

// VolumeBytes is the size of a volume, as du would measure a fresh one.
const VolumeBytes = 4096

// firstPort and ports are the range a fake engine picks a published port
// left to it from, as Docker picks from its ephemeral range.
const (
	firstPort = 32768
	ports     = 10000
)

// State is every fake engine: the hosts of boxes.yaml by name ("" is the
// local engine).
type State struct {
	Hosts map[string]*Host `json:"hosts"`
}

// Host is one fake engine's resources.
type Host struct {
	// Images holds the image IDs the engine has.
	Images     []string     `json:"images"`
	Containers []*Container `json:"containers"`
	Networks   []*Network   `json:"networks"`
	Volumes    []*Volume    `json:"volumes"`
	// Dying names the boxes whose executors made from now on exit as soon
	// as they are started: readiness fails for them, and a recreate puts
	// the previous containers back.
	Dying map[string]bool `json:"dying,omitempty"`
	// Rivals are lease holders by box: the next claim of the box loses to
	// the holder's, made just before it (a lease by another process that
	// raced it).
	Rivals map[string]string `json:"rivals,omitempty"`
	// Machine are addresses the engine's machine holds besides what its
	// docker: address says, as a test gave them (SetMachine).
	Machine []string `json:"machine,omitempty"`
	// NoFreeze and NoRename make an engine without those capabilities
	// (engine.Capabilities), as an engine other than Docker may be: its
	// Pause and RenameContainer refuse.
	NoFreeze bool `json:"no_freeze,omitempty"`
	NoRename bool `json:"no_rename,omitempty"`
	// Made counts the objects made, for their IDs.
	Made int `json:"made"`
}

// Container is one container, as the engine keeps it.
type Container struct {
	ID       string            `json:"id"`
	Name     string            `json:"name"`
	Image    string            `json:"image"`
	Labels   map[string]string `json:"labels"`
	Env      []string          `json:"env"`
	Runtime  string            `json:"runtime"`
	State    string            `json:"state"`
	ExitCode int               `json:"exit_code"`
	// Networks are the names of the networks it is on, with their IDs.
	Networks map[string]string `json:"networks"`
	Mounts   []Mount           `json:"mounts"`
	// Ports are the ports it publishes when it runs.
	Ports []Port `json:"ports"`
	// Logs are its last lines, for readiness errors.
	Logs string `json:"logs,omitempty"`
	// Dying is an executor made while its box was marked dying: it exits
	// as soon as it is started.
	Dying bool `json:"dying,omitempty"`
	// Unlisted is how many more looks at the engine leave it out, though
	// its name is taken (Docker lists a container once it is made).
	Unlisted int `json:"unlisted,omitempty"`
}

// Mount is a named volume mounted at Destination.
type Mount struct {
	Volume      string `json:"volume"`
	Destination string `json:"destination"`
}

// Port is a published port.
type Port struct {
	HostIP        string `json:"host_ip"`
	HostPort      int    `json:"host_port"`
	ContainerPort int    `json:"container_port"`
}

// Network is one network.
type Network struct {
	ID     string            `json:"id"`
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
}

// Volume is one volume.
type Volume struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
	// Content stands for what the volume holds: a text a script writes
	// into a box's /data (fake write), carried by the helper containers
	// that copy one volume into another (snapshot, revert, fork).
	Content string `json:"content,omitempty"`
	// Files are the files and directories streamed into the volume
	// (CopyTo), which CopyFrom and exec's cat read back; helper
	// containers carry them with Content.
	Files []File `json:"files,omitempty"`
}

// Load reads the state at path; a missing file is an empty state.
func Load(path string) (*State, error) {
	s := &State{Hosts: map[string]*Host{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("reading the fake engines' state %s: %w", path, err)
	}
	if s.Hosts == nil {
		s.Hosts = map[string]*Host{}
	}
	return s, nil
}

// Save writes the state to path whole, through a file beside it.
func (s *State) Save(path string) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".fake-engine-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Edit loads the state at path, runs fn on it and saves it.
func Edit(path string, fn func(*State) error) error {
	s, err := Load(path)
	if err != nil {
		return err
	}
	if err := fn(s); err != nil {
		return err
	}
	return s.Save(path)
}

// Host is host's engine, made empty on first use.
func (s *State) Host(host string) *Host {
	h, ok := s.Hosts[host]
	if !ok {
		h = &Host{}
		s.Hosts[host] = h
	}
	return h
}

// newID is a new object's ID: 64 hex digits, the same in every run.
func (h *Host) newID(host string) string {
	h.Made++
	sum := sha256.Sum256([]byte(fmt.Sprintf("fake engine %q, object %d", host, h.Made)))
	return hex.EncodeToString(sum[:])
}

// freePort is a host port for box that no container of the engine
// publishes: one drawn from the box's name, so that it does not depend on
// the order in which an apply's boxes are made (Docker's would).
func (h *Host) freePort(box string) int {
	used := map[int]bool{}
	for _, c := range h.Containers {
		for _, p := range c.Ports {
			used[p.HostPort] = true
		}
	}
	f := fnv.New32a()
	f.Write([]byte(box))
	port := firstPort + int(f.Sum32()%ports)
	for used[port] {
		port++
	}
	return port
}

func (h *Host) container(id string) (int, *Container) {
	for i, c := range h.Containers {
		if c.ID == id || c.Name == id {
			return i, c
		}
	}
	return -1, nil
}

func (h *Host) network(idOrName string) (int, *Network) {
	for i, n := range h.Networks {
		if n.ID == idOrName || n.Name == idOrName {
			return i, n
		}
	}
	return -1, nil
}

func (h *Host) volume(name string) (int, *Volume) {
	for i, v := range h.Volumes {
		if v.Name == name {
			return i, v
		}
	}
	return -1, nil
}

// boxContainers are box's containers (not one-off ones), in name order.
func (h *Host) boxContainers(box string) []*Container {
	var out []*Container
	for _, c := range h.Containers {
		if c.Labels[boxLabel] == box && c.Labels[managedLabel] == "1" && c.Labels[oneOffLabel] == "" {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// AddImage gives host's engine image id.
func (s *State) AddImage(host, id string) {
	h := s.Host(host)
	for _, have := range h.Images {
		if have == id {
			return
		}
	}
	h.Images = append(h.Images, id)
	sort.Strings(h.Images)
}

// find is box's containers on whichever host holds them.
func (s *State) find(box string) (*Host, []*Container, error) {
	hosts := make([]string, 0, len(s.Hosts))
	for name := range s.Hosts {
		hosts = append(hosts, name)
	}
	sort.Strings(hosts)
	for _, name := range hosts {
		if cs := s.Hosts[name].boxContainers(box); len(cs) > 0 {
			return s.Hosts[name], cs, nil
		}
	}
	return nil, nil, fmt.Errorf("no fake engine holds a container of box %s", box)
}

// StopBehind stops box's containers as a docker stop by someone else would:
// they exit 143 (SIGTERM through the container's init).
func (s *State) StopBehind(box string) error {
	_, cs, err := s.find(box)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if c.State == "running" || c.State == "paused" || c.State == "restarting" {
			c.State, c.ExitCode = "exited", 143
		}
	}
	return nil
}

// Crash makes box's container of service exit with code.
func (s *State) Crash(box, service string, code int) error {
	c, err := s.serviceContainer(box, service)
	if err != nil {
		return err
	}
	c.State, c.ExitCode = "exited", code
	c.Logs = fmt.Sprintf("%s: exited with code %d (fake engine)", service, code)
	return nil
}

// KillBehind kills box's container of service, as docker kill by someone
// else would: it exits 137 (SIGKILL), which a crash does not.
func (s *State) KillBehind(box, service string) error {
	c, err := s.serviceContainer(box, service)
	if err != nil {
		return err
	}
	if c.State != "running" && c.State != "paused" {
		return fmt.Errorf("container %s is %s, not running", c.Name, c.State)
	}
	c.State, c.ExitCode = "exited", 137
	return nil
}

// PauseBehind pauses box's container of service, as docker pause by
// someone else would.
func (s *State) PauseBehind(box, service string) error {
	c, err := s.serviceContainer(box, service)
	if err != nil {
		return err
	}
	if c.State != "running" {
		return fmt.Errorf("container %s is %s, not running", c.Name, c.State)
	}
	c.State = "paused"
	return nil
}

// Log adds text to what box's container of service printed, as the
// process in it would.
func (s *State) Log(box, service, text string) error {
	c, err := s.serviceContainer(box, service)
	if err != nil {
		return err
	}
	c.Logs += text
	return nil
}

// RemoveBehind removes box's container of service, as docker rm -f by
// someone else would.
func (s *State) RemoveBehind(box, service string) error {
	h, cs, err := s.find(box)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if c.Labels[serviceLabel] == service {
			i, _ := h.container(c.ID)
			h.Containers = append(h.Containers[:i], h.Containers[i+1:]...)
			return nil
		}
	}
	return fmt.Errorf("box %s has no %s container", box, service)
}

// Disconnect takes box's container of service off network (its full
// name), as docker network disconnect would.
func (s *State) Disconnect(box, service, network string) error {
	c, err := s.serviceContainer(box, service)
	if err != nil {
		return err
	}
	if _, ok := c.Networks[network]; !ok {
		return fmt.Errorf("container %s is not on network %s", c.Name, network)
	}
	delete(c.Networks, network)
	return nil
}

// SetDying makes the executors of box on host made from now on exit as
// soon as they are started (dying), or no longer (not dying).
func (s *State) SetDying(host, box string, dying bool) {
	h := s.Host(host)
	if h.Dying == nil {
		h.Dying = map[string]bool{}
	}
	if dying {
		h.Dying[box] = true
	} else {
		delete(h.Dying, box)
	}
}

// SetRival makes the next claim of box on host lose to a lease of holder,
// made just before it and left out of the next look at the engine.
func (s *State) SetRival(host, box, holder string) {
	h := s.Host(host)
	if h.Rivals == nil {
		h.Rivals = map[string]string{}
	}
	h.Rivals[box] = holder
}

// SetMachine gives host's engine's machine addrs (none: what its docker:
// address says alone), as an address added to or taken off the machine
// would.
func (s *State) SetMachine(host string, addrs []string) {
	s.Host(host).Machine = addrs
}

// Label sets label key of box's container of service to value, or removes
// it (remove), as a container made by another boxes would have it.
func (s *State) Label(box, service, key, value string, remove bool) error {
	c, err := s.serviceContainer(box, service)
	if err != nil {
		return err
	}
	if remove {
		delete(c.Labels, key)
	} else {
		c.Labels[key] = value
	}
	return nil
}

func (s *State) serviceContainer(box, service string) (*Container, error) {
	_, cs, err := s.find(box)
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		if c.Labels[serviceLabel] == service {
			return c, nil
		}
	}
	return nil, fmt.Errorf("box %s has no %s container", box, service)
}

// WriteData makes box's /data hold text, as the box's agent would write it.
func (s *State) WriteData(box, text string) error {
	h, _, err := s.find(box)
	if err != nil {
		return err
	}
	_, v := h.volume(compose.VolumeName(box, compose.AgentVolume))
	if v == nil {
		return fmt.Errorf("box %s has no /data volume", box)
	}
	v.Content = text
	return nil
}

// Data is what box's /data holds (see WriteData), on whichever host has
// its volume.
func (s *State) Data(box string) (string, error) {
	name := compose.VolumeName(box, compose.AgentVolume)
	for _, host := range sortedKeys(s.Hosts) {
		if _, v := s.Hosts[host].volume(name); v != nil {
			return v.Content, nil
		}
	}
	return "", fmt.Errorf("no fake engine holds volume %s", name)
}

// ExpireLease makes the lease of box (its claim and renewals, on any host)
// end at at, as if its time to live had run out.
func (s *State) ExpireLease(box string, at time.Time) error {
	found := false
	for _, h := range s.Hosts {
		for _, c := range h.Containers {
			if c.Labels[compose.LeaseBoxLabel] == box && c.Labels[compose.LeaseExpiresLabel] != "" {
				c.Labels[compose.LeaseExpiresLabel] = at.UTC().Format(time.RFC3339Nano)
				found = true
			}
		}
	}
	if !found {
		return fmt.Errorf("box %s has no lease", box)
	}
	return nil
}
