package engine

import (
	"sort"
	"time"

	"github.com/hermes-box/boxes/internal/text"
)

// Observed is a plain snapshot of one engine: every resource boxes manages
// (labelled hermes-box-lite=1) and the names of those it does not, so that a
// name clash can be reported without touching anything.
type Observed struct {
	Host       string
	Containers []Container
	Volumes    []Volume
	Networks   []Network
	// Snapshots are the snapshot volumes of boxes (boxes snapshot): no
	// part of a box's resources, so that no plan, rm or apply deletes or
	// recreates them, and no part of a saved plan's fingerprint.
	Snapshots []Snapshot `json:"-"`
	// LeaseMarks are the markers of pool boxes' leases (see Lease): no
	// part of any box, nor of a saved plan's fingerprint.
	LeaseMarks []LeaseMark `json:"-"`
	// Unmanaged holds names of containers, volumes and networks without our label.
	Unmanaged Unmanaged
	// Images holds the IDs of images present on the engine that a plan asked about.
	Images map[string]bool
	// ImageSizes are the sizes in bytes of those present, as the engine
	// reports them.
	ImageSizes map[string]int64 `json:",omitempty"`
	// CPUs and Memory (bytes) are the engine's machine's, as docker info
	// reports them (NCPU, MemTotal): no box there can have more. 0 when
	// not known (a plan made without the engines). Like Runtimes, they stay
	// out of a saved plan's fingerprint: a VM's balloon or a runtime
	// registered since makes a plan error, not a stale plan.
	CPUs   int   `json:"-"`
	Memory int64 `json:"-"`
	// Runtimes are the names of the OCI runtimes the engine has (docker
	// info's Runtimes: runc and those its daemon configuration registers,
	// such as runsc), sorted. nil when not known.
	Runtimes []string `json:"-"`
	// Unpublished: the engine publishes no port of a box on a machine
	// (a cluster): a box's executor is reached through the engine itself
	// (BoxForwarder), and where a port is published is no part of a box.
	Unpublished bool `json:"-"`

	// byBox finds each box's resources at once, as Sort left them: a plan
	// asks for every box's (Of), on every host, and a look through all of
	// a host's resources for each made a fleet of thousands of boxes take
	// minutes to plan.
	byBox *boxIndex
}

// boxIndex is where each box's resources are in an Observed's lists, and
// how long the lists were and where they began: lists changed since (a
// resource added) are looked through instead.
type boxIndex struct {
	at                            map[string]*boxPlaces
	containers, volumes, networks listMark
}

// boxPlaces are the places of one box's resources in the lists, in order.
type boxPlaces struct {
	containers, volumes, networks []int
}

// listMark is a list's length and its first element.
type listMark struct {
	n     int
	first any
}

func markOf[T any](xs []T) listMark {
	if len(xs) == 0 {
		return listMark{}
	}
	return listMark{n: len(xs), first: &xs[0]}
}

// index indexes o's resources by box.
func (o *Observed) index() {
	ix := &boxIndex{at: map[string]*boxPlaces{}, containers: markOf(o.Containers), volumes: markOf(o.Volumes), networks: markOf(o.Networks)}
	place := func(box string) *boxPlaces {
		p := ix.at[box]
		if p == nil {
			p = &boxPlaces{}
			ix.at[box] = p
		}
		return p
	}
	for i, c := range o.Containers {
		p := place(c.Box)
		p.containers = append(p.containers, i)
	}
	for i, v := range o.Volumes {
		p := place(v.Box)
		p.volumes = append(p.volumes, i)
	}
	for i, n := range o.Networks {
		p := place(n.Box)
		p.networks = append(p.networks, i)
	}
	o.byBox = ix
}

// indexed is o's index when its lists are still those it indexed.
func (o *Observed) indexed() *boxIndex {
	ix := o.byBox
	if ix == nil || ix.containers != markOf(o.Containers) || ix.volumes != markOf(o.Volumes) || ix.networks != markOf(o.Networks) {
		return nil
	}
	return ix
}

// Unmanaged are resource names on the engine that boxes does not own.
type Unmanaged struct {
	Containers map[string]bool
	Volumes    map[string]bool
	Networks   map[string]bool
}

// Container is one labelled container.
type Container struct {
	ID      string
	Name    string
	Box     string
	Service string
	Image   string // image ID the container runs
	// Fleet is the container's boxes.fleet label; "" for one made before fleets.
	Fleet string `json:",omitempty"`
	State State
	// ExitCode is the last exit code of an exited or restarting container.
	ExitCode int `json:",omitempty"`
	// Restarts is how often Docker restarted the container, read only for a
	// container that is restarting or exited with a failure. It changes on
	// its own, so it stays out of a saved plan's fingerprint.
	Restarts int `json:"-"`
	// OOMKilled and Error are read with Restarts: the kernel killed the
	// process for memory, or Docker could not start it (e.g. "argument list
	// too long").
	OOMKilled bool   `json:",omitempty"`
	Error     string `json:",omitempty"`
	// Networks are the names of the networks the container is connected to.
	Networks []string `json:",omitempty"`
	// NetworkIDs are the IDs of those networks, sorted: two networks can
	// share a name, and only the ID tells which one the container is on.
	NetworkIDs []string `json:",omitempty"`
	// Mounts are the named volumes the container mounts.
	Mounts []Mount `json:",omitempty"`
	// Health is what the container's healthcheck said last time. It
	// changes on its own, so it stays out of a saved plan's fingerprint.
	Health     Health `json:"-"`
	ConfigHash string
	Labels     map[string]string
	Ports      []Port
	// Env is filled only for the executor when a token had to be recovered.
	Env []string
}

// Published is the host address and port that publish containerPort, if
// the container publishes it (a stopped container lists no ports).
func (c Container) Published(containerPort int) (Port, bool) {
	for _, p := range c.Ports {
		if p.ContainerPort == containerPort && p.HostPort != 0 {
			return p, true
		}
	}
	return Port{}, false
}

// Mount is a named volume mounted into a container at Destination.
type Mount struct {
	Volume      string
	Destination string
}

// Port is one published port of a container.
type Port struct {
	HostIP        string
	HostPort      int
	ContainerPort int
}

// Volume is one labelled volume.
type Volume struct {
	Name   string
	Box    string
	Fleet  string `json:",omitempty"`
	Labels map[string]string
	// Size in bytes, or -1 when the engine did not say (only asked for on delete).
	Size int64
	// Created is when the engine made the volume; zero when it did not
	// say. Not part of a saved plan's fingerprint: it never changes.
	Created time.Time `json:"-"`
}

// Snapshot is one snapshot volume: an engine-side copy of a box's /data,
// made by boxes snapshot.
type Snapshot struct {
	Volume string
	Box    string
	Label  string
	Fleet  string
	// Created is when it was made, as its label says; zero when unreadable.
	Created time.Time
	// Size is the size in bytes of the /data it copies; -1 when unknown.
	Size int64
	// Writing is set while a one-off container writing it is left: a
	// snapshot being made, or one a killed boxes left incomplete.
	Writing bool
}

// SnapshotsOf are box name's snapshots, in label order.
func (o *Observed) SnapshotsOf(name string) []Snapshot {
	var out []Snapshot
	for _, s := range o.Snapshots {
		if s.Box == name {
			out = append(out, s)
		}
	}
	return out
}

// Network is one labelled network.
type Network struct {
	ID     string
	Name   string
	Box    string
	Fleet  string `json:",omitempty"`
	Labels map[string]string
}

// Boxes are the names of every box that has a labelled resource, sorted.
func (o *Observed) Boxes() []string {
	seen := map[string]bool{}
	for _, c := range o.Containers {
		seen[c.Box] = true
	}
	for _, v := range o.Volumes {
		seen[v.Box] = true
	}
	for _, n := range o.Networks {
		seen[n.Box] = true
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Resources are the labelled resources of one box on one engine.
type Resources struct {
	Containers []Container
	Volumes    []Volume
	Networks   []Network
}

// Counts are the resources as messages count them: "1 container, 1 network, 2 volumes".
func (r Resources) Counts() string {
	return Counted(len(r.Containers), len(r.Networks), len(r.Volumes))
}

// Empty reports whether the box has no labelled resource at all.
func (r Resources) Empty() bool {
	return len(r.Containers) == 0 && len(r.Volumes) == 0 && len(r.Networks) == 0
}

// Container returns the box's container of service, if any.
func (r Resources) Container(service string) (Container, bool) {
	for _, c := range r.Containers {
		if c.Service == service {
			return c, true
		}
	}
	return Container{}, false
}

// Published is the box's container that publishes containerPort on the
// host, and where: the executor's port is published by the executor, or
// by the gate when the executor has a door (and reaches out through it).
func (r Resources) Published(containerPort int) (Container, Port, bool) {
	for _, c := range r.Containers {
		if p, ok := c.Published(containerPort); ok {
			return c, p, true
		}
	}
	return Container{}, Port{}, false
}

// Of returns the labelled resources of box name.
func (o *Observed) Of(name string) Resources {
	if ix := o.indexed(); ix != nil {
		var r Resources
		if p := ix.at[name]; p != nil {
			r.Containers, r.Volumes, r.Networks = placed(o.Containers, p.containers), placed(o.Volumes, p.volumes), placed(o.Networks, p.networks)
		}
		return r
	}
	all := Resources{Containers: o.Containers, Volumes: o.Volumes, Networks: o.Networks}
	return all.where(func(box, _ string) bool { return box == name })
}

// Holds reports whether box name has a resource on the engine, with no
// copy of them made where the index says.
func (o *Observed) Holds(name string) bool {
	if ix := o.indexed(); ix != nil {
		return ix.at[name] != nil
	}
	return !o.Of(name).Empty()
}

// placed are the elements of xs at places, nil for none, as kept gives them.
func placed[T any](xs []T, places []int) []T {
	if len(places) == 0 {
		return nil
	}
	out := make([]T, len(places))
	for i, p := range places {
		out[i] = xs[p]
	}
	return out
}

// Labelled are the resources that carry fleet's boxes.fleet label: those
// an apply of that fleet made.
func (r Resources) Labelled(fleet string) Resources {
	return r.where(func(_, f string) bool { return f == fleet })
}

// where are the resources whose boxes.box and boxes.fleet labels ok keeps.
func (r Resources) where(ok func(box, fleet string) bool) Resources {
	return Resources{Containers: kept(r.Containers, ok), Volumes: kept(r.Volumes, ok), Networks: kept(r.Networks, ok)}
}

// labelled is a resource with boxes' labels.
type labelled interface{ labels() (box, fleet string) }

func (c Container) labels() (string, string) { return c.Box, c.Fleet }
func (v Volume) labels() (string, string)    { return v.Box, v.Fleet }
func (n Network) labels() (string, string)   { return n.Box, n.Fleet }

func kept[T labelled](xs []T, ok func(box, fleet string) bool) []T {
	var out []T
	for _, x := range xs {
		if ok(x.labels()) {
			out = append(out, x)
		}
	}
	return out
}

// Counted is "2 containers, 1 network, 2 volumes", as rm and a removed
// restore say what they delete.
func Counted(containers, networks, volumes int) string {
	return text.Plural(containers, "container", "containers") + ", " + text.Plural(networks, "network", "networks") + ", " + text.Plural(volumes, "volume", "volumes")
}

// Fleets are the distinct boxes.fleet labels of the resources, sorted; none
// for a box made before fleets existed.
func (r Resources) Fleets() []string {
	seen := map[string]bool{}
	for _, c := range r.Containers {
		seen[c.Fleet] = true
	}
	for _, v := range r.Volumes {
		seen[v.Fleet] = true
	}
	for _, n := range r.Networks {
		seen[n.Fleet] = true
	}
	delete(seen, "")
	out := make([]string, 0, len(seen))
	for f := range seen {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// HeldBy is the fleet other than fleet that holds the resources, or "": a
// box with no fleet label belongs to whichever fleet declares it.
func (r Resources) HeldBy(fleet string) string {
	for _, f := range r.Fleets() {
		if f != fleet {
			return f
		}
	}
	return ""
}

// Owned reports whether fleet's label is on any of the resources.
func (r Resources) Owned(fleet string) bool {
	for _, f := range r.Fleets() {
		if f == fleet {
			return true
		}
	}
	return false
}

// ForFleet is the part of the snapshot a plan of fleet acts on: the boxes
// that carry its label or no fleet label at all. Another fleet's changes
// leave it unchanged, so they never make a saved plan stale.
func (o *Observed) ForFleet(fleet string) *Observed {
	out := *o
	out.Containers, out.Volumes, out.Networks = nil, nil, nil
	for _, name := range o.Boxes() {
		r := o.Of(name)
		if r.HeldBy(fleet) != "" {
			continue
		}
		out.Containers = append(out.Containers, r.Containers...)
		out.Volumes = append(out.Volumes, r.Volumes...)
		out.Networks = append(out.Networks, r.Networks...)
	}
	out.Sort()
	return &out
}

// Sort puts every list in a stable order, so snapshots compare and hash equal.
func (o *Observed) Sort() {
	sort.Slice(o.Containers, func(i, j int) bool { return o.Containers[i].Name < o.Containers[j].Name })
	sort.Slice(o.Volumes, func(i, j int) bool { return o.Volumes[i].Name < o.Volumes[j].Name })
	sort.Slice(o.Networks, func(i, j int) bool { return o.Networks[i].Name < o.Networks[j].Name })
	sort.Slice(o.Snapshots, func(i, j int) bool {
		a, b := o.Snapshots[i], o.Snapshots[j]
		return a.Box < b.Box || (a.Box == b.Box && a.Label < b.Label)
	})
	for i := range o.Containers {
		c := &o.Containers[i]
		sort.Slice(c.Ports, func(a, b int) bool {
			if c.Ports[a].HostIP != c.Ports[b].HostIP {
				return c.Ports[a].HostIP < c.Ports[b].HostIP
			}
			return c.Ports[a].HostPort < c.Ports[b].HostPort
		})
	}
	o.index()
}
