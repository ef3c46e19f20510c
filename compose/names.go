package compose

import (
	"fmt"

	"github.com/hermes-box/boxes/spec"
)

// The one table of names and labels that identify a box on Docker. Everything
// that creates, finds or removes a box's resources goes through here.
const (
	// ManagedLabel marks every container, volume and network boxes owns.
	ManagedLabel = "hermes-box-lite"
	// BoxLabel names the box a resource belongs to.
	BoxLabel = "boxes.box"
	// FleetLabel names the fleet (boxes.yaml) a resource belongs to. It is
	// not part of any compose config hash, so boxes made before it existed
	// are not recreated for it; such resources have no fleet label.
	FleetLabel = "boxes.fleet"
	// PoolLabel names the pool (under pools: in boxes.yaml) a box is one
	// of, beside its fleet label.
	PoolLabel = "boxes.pool"
	// LeaseLabel marks a pool box's lease marker container (its kind:
	// claim, renew or reset; see engine.LeaseMark), which is never
	// started and is no part of the box. The others carry what it records.
	LeaseLabel        = "boxes.lease"
	LeaseBoxLabel     = "boxes.lease.box"
	LeaseHolderLabel  = "boxes.lease.holder"
	LeaseIDLabel      = "boxes.lease.id"
	LeaseExpiresLabel = "boxes.lease.expires"
	LeaseStartedLabel = "boxes.lease.started"
	LeaseByLabel      = "boxes.lease.by"
	// OneOffLabel marks the short-lived containers boxes runs on a box's
	// volumes and removes after: they are no part of the box.
	OneOffLabel = "boxes.oneoff"
	// RoomLabel marks the one-off that measures the room for a restore's
	// data with the box restored.
	RoomLabel = "boxes.room-for"
	// SnapshotLabel marks a snapshot volume with its label, and the one-off
	// container that is writing it; SnapshotCreatedLabel is when it was
	// made (RFC 3339, UTC), SnapshotSizeLabel the size in bytes of the
	// /data it copies.
	SnapshotLabel        = "boxes.snapshot"
	SnapshotCreatedLabel = "boxes.snapshot.created"
	SnapshotSizeLabel    = "boxes.snapshot.size"

	ProjectPrefix = "hbl-"

	AgentService    = "agent"
	ExecutorService = "executor"
	// GateService is the box's network gate: the agent's one way out.
	GateService = "gate"

	AgentVolume    = "agent-data"
	ExecutorVolume = "exec-data"
	Network        = "default"
	// InsideNetwork is the box's network with no route out: the agent is on
	// it alone; the executor and the gate are on it and on Network.
	InsideNetwork = "inside"
	// ExecutorNetwork is the network, with no route out, that the gate
	// shares with the executor alone when the executor has a door: the
	// executor's proxy is on it, where the agent has no way.
	ExecutorNetwork = "exec"
	// ExecutorGate is the gate's name on ExecutorNetwork alone (a network
	// alias): the executor's proxy listens at the address it resolves to.
	ExecutorGate = "exec-gate"

	// ExecutorPort is the port Executor listens on inside the box's network.
	ExecutorPort = 4788
	// TokenVar is the environment variable carrying the box's bearer token.
	TokenVar = "EXECUTOR_TOKEN"
)

// The labels docker/compose reads and writes on a project's resources, in
// boxes' one table so that the pure side need not link compose's API
// package; TestComposeLabels holds them equal to compose's own.
const (
	ComposeProjectLabel     = "com.docker.compose.project"
	ComposeServiceLabel     = "com.docker.compose.service"
	ComposeConfigHashLabel  = "com.docker.compose.config-hash"
	ComposeWorkingDirLabel  = "com.docker.compose.project.working_dir"
	ComposeConfigFilesLabel = "com.docker.compose.project.config_files"
	ComposeOneoffLabel      = "com.docker.compose.oneoff"
)

// Labels are the labels boxes puts on every resource of box name.
func Labels(name string) map[string]string {
	return map[string]string{ManagedLabel: "1", BoxLabel: name}
}

// FleetLabels are the labels that put a resource in fleet (none for "").
func FleetLabels(fleet string) map[string]string {
	if fleet == "" {
		return map[string]string{}
	}
	return map[string]string{FleetLabel: fleet}
}

// ProjectName is the compose project of box name.
func ProjectName(name string) string { return ProjectPrefix + name }

// VolumeName is the Docker name of one of the box's volumes (AgentVolume or ExecutorVolume).
func VolumeName(box, volume string) string { return ProjectName(box) + "_" + volume }

// SnapshotVolumeName is the Docker name of the volume holding snapshot
// label of the box.
func SnapshotVolumeName(box, label string) string { return ProjectName(box) + "_snap-" + label }

// NetworkName is the Docker name of the box's private network.
func NetworkName(box string) string { return ProjectName(box) + "_" + Network }

// InsideNetworkName is the Docker name of the box's network with no route out.
func InsideNetworkName(box string) string { return ProjectName(box) + "_" + InsideNetwork }

// ContainerName is the Docker name compose gives the box's container of service.
func ContainerName(box, service string) string { return ProjectName(box) + "-" + service + "-1" }

// ExecutorNetworkName is the Docker name of the network the gate shares
// with the executor alone, when the executor has a door.
func ExecutorNetworkName(box string) string { return ProjectName(box) + "_" + ExecutorNetwork }

// Services are a box's services, in the order plans name them.
var Services = []string{AgentService, ExecutorService, GateService}

// ServiceNetworks are the Docker names of the networks box's container of
// service is on: the agent only on the inside network, the executor and
// the gate on both; with the executor's door (door), the executor leaves
// the ordinary network for the one it shares with the gate alone. Sorted.
func ServiceNetworks(box string, door bool, service string) []string {
	switch {
	case service == AgentService:
		return []string{InsideNetworkName(box)}
	case door && service == ExecutorService:
		return []string{ExecutorNetworkName(box), InsideNetworkName(box)}
	case door && service == GateService:
		return []string{NetworkName(box), ExecutorNetworkName(box), InsideNetworkName(box)}
	}
	return []string{NetworkName(box), InsideNetworkName(box)}
}

// NetworkNames are the Docker names of box's networks; with the
// executor's door, the one the gate shares with the executor too.
func NetworkNames(box string, door bool) []string {
	if door {
		return []string{NetworkName(box), InsideNetworkName(box), ExecutorNetworkName(box)}
	}
	return []string{NetworkName(box), InsideNetworkName(box)}
}

// PortService is the service whose container publishes b's executor port
// on the host: the executor itself, or, when it has a door, the gate,
// which relays it (Docker publishes no port of a container that is on
// networks with no route out alone).
func PortService(b spec.Box) string {
	if b.Executor.Door {
		return GateService
	}
	return ExecutorService
}

// LeaseName is the name of box name's lease marker of kind (claim, reset),
// or of a renewal made at nanosecond n.
func LeaseName(name, kind string, n int64) string {
	switch kind {
	case "claim":
		return ProjectName(name) + ".lease"
	case "renew":
		return fmt.Sprintf("%s.lease-renew-%d", ProjectName(name), n)
	}
	return ProjectName(name) + ".lease-" + kind
}
