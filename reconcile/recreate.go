package reconcile

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/spec"
)

// recreateReasons lists why a box's containers must be replaced; none means they can stay.
func recreateReasons(in Input, b spec.Box, r engine.Resources, hostPort int) ([]Reason, error) {
	var reasons []Reason
	if in.Replace[b.Name] {
		reasons = append(reasons, Reason{Kind: "replace"})
	}
	want := wantedHashes(in, b, hostPort)
	if !want.token() {
		reasons = append(reasons, Reason{Kind: "token"})
	}
	if len(r.Containers) == 0 {
		// Volumes or a network without containers: an apply cut short
		// before compose created them, or someone removed them.
		reasons = append(reasons, Reason{Kind: "nocontainers"})
	}
	network := compose.NetworkName(b.Name)
	haveNetwork := hasNetwork(r, network)
	if !haveNetwork && len(r.Containers) > 0 {
		reasons = append(reasons, Reason{Kind: "network", Old: network})
	}
	// The inside network, once the box has its gate (before, the door's
	// reason makes it).
	if inside := compose.InsideNetworkName(b.Name); len(r.Containers) > 0 && !hasNetwork(r, inside) {
		if _, gated := r.Container(compose.GateService); gated {
			reasons = append(reasons, Reason{Kind: "network", Old: inside})
		}
	}
	// The executor's network, once the gate was made with the executor's
	// door (before, the door's settings make it).
	if execNet := compose.ExecutorNetworkName(b.Name); b.Executor.Door && !hasNetwork(r, execNet) {
		if g, ok := r.Container(compose.GateService); ok && compose.HasExecutorDoor(g.Labels) {
			reasons = append(reasons, Reason{Kind: "network", Old: execNet})
		}
	}
	named := map[string]bool{}
	if door, ok := doorReason(b, r); ok {
		reasons = append(reasons, door)
	}
	for _, service := range compose.Services {
		if len(r.Containers) == 0 {
			break
		}
		reasons = serviceReasons(reasons, in, b, r, service, want, haveNetwork, named)
	}
	if want.err != nil {
		return nil, want.err
	}
	return volumeReasons(reasons, in, b, r)
}

// hashes are the config hashes a box's containers may have, by service:
// none without the box's token. A container made with port: auto was hashed
// before Docker chose its port (port 0), one remade with its port kept was
// hashed with it: each candidate port's hashes are computed only when a
// container's hash did not match the ones before, so that a plan of boxes
// that did not change hashes each box once.
type hashes struct {
	in    Input
	box   spec.Box
	tok   string
	known bool
	// ports are the candidate ports, the likelier first; got their hashes
	// once computed.
	ports []int
	got   []map[string]string
	err   error
}

// token reports whether the box's token was known, and so its hashes.
func (h *hashes) token() bool { return h.known }

// matches reports whether hash is what service's container should have.
// An error computing a candidate is kept in h.err and matches nothing.
func (h *hashes) matches(service, hash string) bool {
	for i := range h.ports {
		if h.got[i] == nil && h.err == nil {
			h.got[i], h.err = h.compute(i)
		}
		if h.got[i] != nil && hash == h.got[i][service] {
			return true
		}
	}
	return false
}

// compute is the hashes of candidate i.
func (h *hashes) compute(i int) (map[string]string, error) {
	return desiredHashes(h.in, h.box, h.tok, h.ports[i])
}

// now is the hash service's container would have if made now (with the
// port it has).
func (h *hashes) now(service string) string {
	i := len(h.ports) - 1
	if h.got[i] == nil && h.err == nil {
		h.got[i], h.err = h.compute(i)
	}
	return h.got[i][service]
}

func wantedHashes(in Input, b spec.Box, hostPort int) *hashes {
	token, ok := in.Tokens[b.Name]
	h := &hashes{in: in, box: b, tok: token, known: ok, ports: []int{hostPort}}
	if b.Executor.Port == 0 && hostPort != 0 {
		// Most containers of a port: auto box were made by compose, which
		// hashes them before the engine chooses the port.
		h.ports = []int{0, hostPort}
	}
	h.got = make([]map[string]string, len(h.ports))
	return h
}

// serviceReasons adds why service's container of box b (resources r) must
// be replaced; named are the settings fields already named, which cpus and
// memory, shaping both containers, would otherwise name twice.
func serviceReasons(reasons []Reason, in Input, b spec.Box, r engine.Resources, service string, h *hashes, haveNetwork bool, named map[string]bool) []Reason {
	var cs []engine.Container
	for _, c := range r.Containers {
		if c.Service == service {
			cs = append(cs, c)
		}
	}
	switch {
	case len(cs) == 0 && service == compose.GateService && HasKind(reasons, "door"):
		return reasons // the door's reason says it
	case len(cs) == 0:
		return append(reasons, Reason{Kind: "missing", Service: service})
	case len(cs) > 1:
		return append(reasons, Reason{Kind: "duplicate", Service: service, Old: fmt.Sprint(len(cs))})
	}
	c := cs[0]
	// compose names a replacement ID_NAME and renames it last: a
	// recreate killed between removing the old container and the
	// rename leaves the box's only container under the wrong name.
	if want := compose.ContainerName(b.Name, service); c.Name != want {
		return append(reasons, Reason{Kind: "renamed", Service: service, Old: c.Name, New: want})
	}
	if c.State == engine.Dead || c.State == engine.Removing {
		return append(reasons, Reason{Kind: "dead", Service: service, Old: string(c.State)})
	}
	if b.State == spec.Running {
		if crash, ok := crashReason(c); ok {
			reasons = append(reasons, crash)
		}
	}
	door := HasKind(reasons, "door")
	// The networks the container was made for: a container made with or
	// without the executor's door that now must not be is remade for its
	// settings, which say why.
	for _, network := range compose.ServiceNetworks(b.Name, compose.HasExecutorDoor(c.Labels), service) {
		if haveNetwork && !door && !contains(c.Networks, network) {
			reasons = append(reasons, Reason{Kind: "disconnected", Service: service, Old: network})
		}
	}
	// Published elsewhere with the configuration unchanged is drift; with
	// it changed, the recreate's own reason says why.
	if publishesPort(service, c) && !unpublished(in, b) && c.State == engine.Running && (!h.token() || h.matches(service, c.ConfigHash)) {
		if got, want, ok := publishedDrift(b, c); ok {
			reasons = append(reasons, Reason{Kind: "published", Service: service, Old: got, New: want})
		}
	}
	if c.Image != in.Image {
		if !HasKind(reasons, "image") {
			reasons = append(reasons, Reason{Kind: "image", Old: c.Image, New: in.Image})
		}
		return reasons
	}
	if !h.token() || h.matches(service, c.ConfigHash) || door {
		// A box that gets its gate is remade for that: its one reason.
		return reasons
	}
	return configReasons(reasons, in, b, service, c, h.now(service), named)
}

// configReasons adds the settings that changed in service's container c,
// or its config hash (now, against want) when the settings it records name
// none.
func configReasons(reasons []Reason, in Input, b spec.Box, service string, c engine.Container, want string, named map[string]bool) []Reason {
	changes := compose.SettingsDiff(c.Labels[compose.SettingsLabel], compose.ServiceSettings(b, service))
	if service == compose.GateService {
		changes = slices.DeleteFunc(changes, publishedByTheDoor)
		machine := machineReasons(in, b, c)
		reasons = append(reasons, machine...)
		switch {
		case len(changes) > 0:
		case in.Unread[b.Name]:
			return reasons
		case len(machine) > 0:
			return append(reasons, credentialReasons(in, b, c)...)
		default:
			if changed := credentialReasons(in, b, c); len(changed) > 0 {
				return append(reasons, changed...)
			}
			if _, recorded := c.Labels[compose.ClosedLabel]; !recorded {
				return append(reasons, Reason{Kind: "machine", Service: service, Field: "unrecorded"})
			}
		}
	}
	if len(changes) == 0 {
		return append(reasons, Reason{Kind: "config", Service: service, Old: c.ConfigHash, New: want})
	}
	for _, ch := range changes {
		if !named[ch.Field] {
			named[ch.Field] = true
			reasons = append(reasons, Reason{Kind: "config", Field: ch.Field, Old: ch.Old, New: ch.New})
		}
	}
	return reasons
}

// volumeReasons adds the volumes box b's containers (resources r) lack; a
// lost data volume is an error, never a silent recreate.
func volumeReasons(reasons []Reason, in Input, b spec.Box, r engine.Resources) ([]Reason, error) {
	for _, vol := range []string{compose.AgentVolume, compose.ExecutorVolume} {
		name := compose.VolumeName(b.Name, vol)
		if hasVolume(r, name) || len(r.Containers) == 0 {
			continue
		}
		switch {
		case vol == compose.ExecutorVolume:
			reasons = append(reasons, Reason{Kind: "volume", Old: name, New: "Executor's scratch space, made again empty"})
		case in.Replace[b.Name]:
			reasons = append(reasons, Reason{Kind: "volume", Old: name, New: "the box starts with an empty /data (--replace)"})
		default:
			// The agent volume is the box: never recreate silently over its loss.
			return nil, &MissingVolumeError{Box: b.Name, Volume: name}
		}
	}
	return reasons, nil
}

// ErrVolumeMissing is a box whose containers exist without its data volume.
var ErrVolumeMissing = errors.New("the box's data volume is missing")

// MissingVolumeError names the box and the volume; a plan stops on it
// rather than recreate the box over an empty /data.
type MissingVolumeError struct{ Box, Volume string }

func (e *MissingVolumeError) Error() string {
	return fmt.Sprintf("volume %s is missing while the containers of box %s exist: recreating would start it with an empty /data (restore it with boxes rm %s then boxes load FILE %s, or pass --replace %s to recreate it empty)",
		e.Volume, e.Box, e.Box, e.Box, e.Box)
}

func (e *MissingVolumeError) Unwrap() error { return ErrVolumeMissing }

// publishedByTheDoor reports whether ch is the gate's record of the
// executor's port coming or going with the executor's door, which the
// executor's own record of the door names.
func publishedByTheDoor(ch compose.FieldChange) bool {
	return (ch.Field == "executor.bind" || ch.Field == "executor.port") && (ch.Old == "" || ch.New == "")
}

// unpublished reports whether b's host publishes no ports (a cluster):
// there the executor is reached through the engine, not on a port.
func unpublished(in Input, b spec.Box) bool {
	o := in.Observed[b.Host]
	return o != nil && o.Unpublished
}

// publishesPort reports whether service's container c publishes its box's
// executor port, as it was made: the executor, or the gate when it was made
// with the executor's door.
func publishesPort(service string, c engine.Container) bool {
	door := compose.HasExecutorDoor(c.Labels)
	return (service == compose.ExecutorService && !door) || (service == compose.GateService && door)
}

// publishedDrift compares where a running executor is published with what
// boxes.yaml declares: the bind address, and the port when it is fixed.
func publishedDrift(b spec.Box, c engine.Container) (got, want string, drift bool) {
	want = hostPort(b.Executor.Bind, "auto")
	if b.Executor.Port != 0 {
		want = hostPort(b.Executor.Bind, strconv.Itoa(b.Executor.Port))
	}
	var seen []string
	ok := len(c.Ports) > 0
	for _, p := range c.Ports {
		if p.ContainerPort != compose.ExecutorPort {
			continue
		}
		seen = append(seen, hostPort(p.HostIP, strconv.Itoa(p.HostPort)))
		if !sameBind(p.HostIP, b.Executor.Bind) || (b.Executor.Port != 0 && p.HostPort != b.Executor.Port) {
			ok = false
		}
	}
	if len(seen) == 0 {
		ok = false
	}
	if ok {
		return "", "", false
	}
	return strings.Join(seen, ", "), want, true
}

// sameBind reports whether Docker's listed host IP is the declared bind: a
// wildcard bind is listed once per address family.
func sameBind(listed, declared string) bool {
	if listed == declared {
		return true
	}
	wild := func(s string) bool { return s == "0.0.0.0" || s == "::" || s == "" }
	return wild(listed) && wild(declared)
}

func hostPort(ip, port string) string {
	if strings.Contains(ip, ":") {
		return "[" + ip + "]:" + port
	}
	return ip + ":" + port
}

// strayNetworks are box's labelled networks that have its network's name,
// but the one it keeps: the one most of its containers are on (the smallest
// ID among equals, so the same snapshot always gives the same plan). An
// engine's duplicate check does not see a create still in flight, so a
// create that follows a killed one can make a second network of the name,
// and then nothing can use the name. onStray are the containers on a stray
// network: they are removed with the strays, and made again on the kept one.
func StrayNetworks(box string, r engine.Resources) (strays []NamedID, onStray map[string]bool) {
	for _, name := range []string{compose.NetworkName(box), compose.InsideNetworkName(box)} {
		s, on := strayNetworksNamed(name, r)
		strays = append(strays, s...)
		for id := range on {
			if onStray == nil {
				onStray = map[string]bool{}
			}
			onStray[id] = true
		}
	}
	return strays, onStray
}

// strayNetworksNamed are the networks of r named name beyond the one kept.
func strayNetworksNamed(name string, r engine.Resources) (strays []NamedID, onStray map[string]bool) {
	var same []engine.Network
	for _, n := range r.Networks {
		if n.Name == name {
			same = append(same, n)
		}
	}
	if len(same) < 2 {
		return nil, nil
	}
	users := map[string]int{}
	for _, c := range r.Containers {
		for _, id := range c.NetworkIDs {
			users[id]++
		}
	}
	sort.Slice(same, func(i, j int) bool {
		if users[same[i].ID] != users[same[j].ID] {
			return users[same[i].ID] > users[same[j].ID]
		}
		return same[i].ID < same[j].ID
	})
	onStray = map[string]bool{}
	for _, n := range same[1:] {
		strays = append(strays, NamedID{Name: n.Name, ID: n.ID})
		for _, c := range r.Containers {
			if contains(c.NetworkIDs, n.ID) {
				onStray[c.ID] = true
			}
		}
	}
	return strays, onStray
}

func countNamed(ids []NamedID, name string) int {
	n := 0
	for _, id := range ids {
		if id.Name == name {
			n++
		}
	}
	return n
}

func hasNetwork(r engine.Resources, name string) bool {
	for _, n := range r.Networks {
		if n.Name == name {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func desiredHashes(in Input, b spec.Box, token string, hostPort int) (map[string]string, error) {
	return compose.ServiceHashesOf(compose.Input{
		Box:        b,
		Image:      in.Image,
		Token:      token,
		HostPort:   hostPort,
		WorkDir:    filepath.Dir(in.Config.Path),
		ConfigFile: in.Config.Path,
		Door:       in.Doors[b.Name],
	})
}
