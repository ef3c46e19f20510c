package reconcile

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/spec"
)

// DeletionOf is the delete of box name's resources r on host, as a plan
// would make it: the applier removes with it what a failed create or
// restore made.
func DeletionOf(host, name string, r engine.Resources) BoxPlan {
	return planDelete(Input{}, host, name, r)
}

func planDelete(in Input, host, name string, r engine.Resources) BoxPlan {
	d := &Deletion{Backup: in.Backups[name], Containers: []NamedID{}, Networks: []NamedID{}, Volumes: []DeletedVolume{}}
	for _, c := range r.Containers {
		d.Containers = append(d.Containers, NamedID{Name: c.Name, ID: c.ID})
	}
	for _, n := range r.Networks {
		d.Networks = append(d.Networks, NamedID{Name: n.Name, ID: n.ID})
	}
	for _, v := range r.Volumes {
		d.Volumes = append(d.Volumes, DeletedVolume{Name: v.Name, Size: -1, Unread: "not measured"})
	}
	why := Reason{Kind: "undeclared"}
	if pool, ok := in.Config.PoolOf(name); ok && pool.Host == host {
		why = Reason{Kind: "pool", Old: pool.Name, New: strconv.Itoa(pool.Size)}
	}
	return BoxPlan{Name: name, Host: host, Action: Delete, Reasons: []Reason{why}, Delete: d}
}

// conflicts fails when a name a targeted declared box needs is held by an unlabelled resource.
func conflicts(in Input, declared map[string]spec.Box) error {
	var found []string
	names := make([]string, 0, len(declared))
	for n := range declared {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		b := declared[name]
		o := in.Observed[b.Host]
		if o == nil || !in.targeted(name) {
			continue
		}
		for _, s := range compose.Services {
			if n := compose.ContainerName(name, s); o.Unmanaged.Containers[n] {
				found = append(found, fmt.Sprintf("container %s on %s (needed by box %s)", n, HostLabel(b.Host), name))
			}
		}
		for _, v := range []string{compose.AgentVolume, compose.ExecutorVolume} {
			if n := compose.VolumeName(name, v); o.Unmanaged.Volumes[n] {
				found = append(found, fmt.Sprintf("volume %s on %s (needed by box %s)", n, HostLabel(b.Host), name))
			}
		}
		for _, n := range []string{compose.NetworkName(name), compose.InsideNetworkName(name)} {
			if o.Unmanaged.Networks[n] {
				found = append(found, fmt.Sprintf("network %s on %s (needed by box %s)", n, HostLabel(b.Host), name))
			}
		}
	}
	if len(found) == 0 {
		return nil
	}
	return &ConflictError{Resources: found}
}

// ConflictError names the unlabelled resources that block a plan.
type ConflictError struct{ Resources []string }

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s: %s", ErrUnmanagedConflict, strings.Join(e.Resources, "; "))
}

func (e *ConflictError) Unwrap() error { return ErrUnmanagedConflict }

func observedAnywhere(obs map[string]*engine.Observed, fleet, name string) bool {
	for _, o := range obs {
		if r := o.Of(name); r.Owned(fleet) && r.HeldBy(fleet) == "" {
			return true
		}
	}
	return false
}

// ErrHeldByFleet is a declared box whose name another fleet holds on that engine.
var ErrHeldByFleet = errors.New("box name held by another fleet")

// FleetConflictError names each declared box another fleet holds, and where.
type FleetConflictError struct {
	Fleet string
	Boxes []string
}

func (e *FleetConflictError) Error() string {
	return fmt.Sprintf("fleet %s declares boxes that other fleets hold: %s; rename them in boxes.yaml (boxes never touches another fleet's box)", e.Fleet, strings.Join(e.Boxes, "; "))
}

func (e *FleetConflictError) Unwrap() error { return ErrHeldByFleet }

// heldByOtherFleets fails when a targeted declared box's name is held on its
// engine by a box of another fleet.
func heldByOtherFleets(in Input) error {
	var found []string
	for _, b := range in.Config.Boxes {
		o := in.Observed[b.Host]
		if o == nil || !in.targeted(b.Name) {
			continue
		}
		if other := o.Of(b.Name).HeldBy(in.Config.Fleet); other != "" {
			found = append(found, fmt.Sprintf("box %s is fleet %s's on %s", b.Name, other, HostLabel(b.Host)))
		}
	}
	if len(found) == 0 {
		return nil
	}
	return &FleetConflictError{Fleet: in.Config.Fleet, Boxes: found}
}

// observedElsewhere is the first host other than host, in name order, that
// holds box name; the local engine's name is "", hence found.
func observedElsewhere(obs map[string]*engine.Observed, holders map[string][]string, fleet, name, host string) (other string, found bool) {
	for _, h := range holders[name] {
		if h == host {
			continue
		}
		if r := obs[h].Of(name); !r.Empty() && r.HeldBy(fleet) == "" {
			return h, true
		}
	}
	return "", false
}

// holdersOf are the hosts that hold a resource of each box, in name order:
// found once for a plan, so that where each box is is a lookup, not a look
// at every host (a fleet of thousands of boxes on a hundred hosts).
func holdersOf(obs map[string]*engine.Observed) map[string][]string {
	hosts := make([]string, 0, len(obs))
	for h := range obs {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	out := map[string][]string{}
	for _, h := range hosts {
		if obs[h] == nil {
			continue
		}
		for _, name := range obs[h].Boxes() {
			out[name] = append(out[name], h)
		}
	}
	return out
}

// boxHostPort is the host port a box (resources r) publishes its
// executor's port on, or kept when a recreate pinned it: the executor's
// own, or, when the executor has a door, its gate's.
func boxHostPort(r engine.Resources) int {
	for _, s := range []string{compose.ExecutorService, compose.GateService} {
		if c, ok := r.Container(s); ok {
			if p := executorHostPort(c); p != 0 {
				return p
			}
		}
	}
	return 0
}

func executorHostPort(c engine.Container) int {
	if p, ok := c.Published(compose.ExecutorPort); ok {
		return p.HostPort
	}
	port, _ := strconv.Atoi(c.Labels[compose.HostPortLabel])
	return port
}

func hasVolume(r engine.Resources, name string) bool {
	for _, v := range r.Volumes {
		if v.Name == name {
			return true
		}
	}
	return false
}

// HostLabel names a host in messages: "the local engine" or "host NAME".
func HostLabel(host string) string {
	if host == "" {
		return "the local engine"
	}
	return "host " + host
}
