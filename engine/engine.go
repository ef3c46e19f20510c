package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/hermes-box/boxes/spec"
)

// Engine is the whole contract: what boxes asks of the engine of one host.
// Each workflow takes the part it uses (Lifecycle, Inside, Helpers,
// VolumeSizer); the workspace holds the whole. A box's desired form is its
// compose project (package compose): the unit the Docker engine takes, and
// the one every engine is given.
type Engine interface {
	Lifecycle
	VolumeSizer
	Helpers
	// ContainerEnv is the environment of container id, from which a lost
	// token is recovered.
	ContainerEnv(ctx context.Context, id string) ([]string, error)
	// ContainerRuntime is the OCI runtime a container runs under (doctor).
	ContainerRuntime(ctx context.Context, id string) (string, error)
	// ExecutorReach is how a person on this machine reaches a port the
	// engine publishes on bind:port.
	ExecutorReach(bind string, port int) Reach
	// Exec runs a command in running container id and returns its exit
	// code once its output has ended.
	Exec(ctx context.Context, id string, o ExecOptions) (int, error)
	// Logs copies container id's logs to stdout and stderr, following them
	// until ctx ends when asked to.
	Logs(ctx context.Context, id string, o LogOptions, stdout, stderr io.Writer) error
	// StillRunning reports whether container id runs (false once it is gone).
	StillRunning(ctx context.Context, id string) (bool, error)
	// Forward forwards a local port to bind:port on the loopback of the
	// engine's machine, over the ssh it is reached by; one reached
	// otherwise cannot.
	Forward(ctx context.Context, bind string, port int) (Forward, error)
	// MachineAddresses are the addresses of the machine the engine runs
	// on, as this machine sees it: the gate closes the public ones.
	MachineAddresses() []netip.Addr
	// ID is the engine's identity, "" when it has none: two hosts whose
	// engines have one ID reach one engine.
	ID() string
	// SameEngineAs is the refusal of this engine's host when host first,
	// checked before it, reaches the same engine.
	SameEngineAs(first string) error
	// SaveImage streams image ref out of the engine, with the image ID it
	// has there; the caller closes the stream.
	SaveImage(ctx context.Context, ref string) (id string, r io.ReadCloser, err error)
	// LoadImage loads r, another engine's SaveImage of ref whose image ID
	// is id, and fails unless this engine then has ref as id. It returns
	// the bytes read.
	LoadImage(ctx context.Context, ref, id string, r io.Reader) (int64, error)
	// PullImage pulls ref, pinned by digest, and fails unless ref is then image.
	PullImage(ctx context.Context, ref, image string) error
	// CreateLeaseMark creates lease marker m (an object of its own name,
	// made at most once: the claim) and returns its ID; a name taken is
	// ErrLeaseTaken.
	CreateLeaseMark(ctx context.Context, image string, m LeaseMark) (string, error)
	Close() error
}

// BoxForwarder is an engine whose boxes' executors publish no port on a
// machine: a person here reaches one through a local port the engine
// forwards to the box's executor itself (a cluster's API server
// port-forward), which lives until Close.
type BoxForwarder interface {
	ForwardExecutor(ctx context.Context, box string) (Forward, error)
	// ForwardVia says, for messages, how the forward reaches the box
	// (", forwarded through the API server of host …").
	ForwardVia() string
}

// ControlPlane is an engine with a control plane a box's agent must not
// reach directly (a cluster's API server): doctor tries to connect to it
// from inside the agent, as proof that a box's traffic cannot go around
// its gate.
type ControlPlane interface {
	// ControlPlaneURL is its address, as this machine reaches it
	// ("https://10.0.0.1:6443").
	ControlPlaneURL() string
}

// PoolObserver is an engine that observes one pool alone: the containers
// labelled with its fleet and its name (its boxes' and their lease
// markers), read as Observe reads them, and nothing else (no volumes,
// networks, images, nor the machine's size). It is all a lease needs to
// claim a free box; an engine without it is observed whole.
type PoolObserver interface {
	ObservePool(ctx context.Context, fleet, pool string) (*Observed, error)
}

// Connector reaches the engine of one host of boxes.yaml (spec.Host{} is
// the local engine).
type Connector interface {
	Connect(ctx context.Context, host spec.Host) (Engine, error)
}

// MachineFinder is a Connector that can tell the addresses of the machine
// a host's engine runs on, as Engine.MachineAddresses does, without
// reaching the engine.
type MachineFinder interface {
	MachineAddresses(host spec.Host) ([]netip.Addr, error)
}

// Capabilities are the contract's optional parts an engine has.
type Capabilities struct {
	// Freeze: the engine freezes every process of a container at one
	// instant and thaws them (Pause, Unpause). Without it a save or a
	// snapshot quiesces the box (hb quiesce) and reads it unfrozen.
	Freeze bool
	// Rename: the engine renames a container (RenameContainer). Without
	// it a container left under another name by an interrupted replace is
	// removed and made again under its own (its volumes are kept).
	Rename bool
}

// Lifecycle is what the applier needs to make a box as declared.
type Lifecycle interface {
	// Capabilities say what of the contract's optional parts the engine
	// has; the workflows take another way where it lacks one.
	Capabilities() Capabilities
	// Create makes the project's network, volumes and containers, not started;
	// force replaces existing containers (volumes are always kept).
	Create(ctx context.Context, p *types.Project, force bool) error
	// Replace remakes the containers of the named services alone, leaving
	// the others (and what depends on these) as they run.
	Replace(ctx context.Context, p *types.Project, services []string) error
	Start(ctx context.Context, p *types.Project) error
	Stop(ctx context.Context, project string) error
	RemoveContainer(ctx context.Context, id string) error
	// RenameContainer gives the container named from the name to (an
	// engine with Capabilities().Rename).
	RenameContainer(ctx context.Context, from, to string) error
	RemoveNetwork(ctx context.Context, id string) error
	RemoveVolume(ctx context.Context, name string) error
	// WaitReady returns once the box's Executor answers an authenticated MCP
	// initialize, with where a person on this machine reaches it: the URL,
	// or for a port only the box's host reaches, how it is reached.
	WaitReady(ctx context.Context, box, token string) (string, error)
	// WaitInit returns once the box's agent container runs and its hb init
	// has finished, and its gate answers; a container that exits or
	// restarts fails it at once, with its last log lines.
	WaitInit(ctx context.Context, box string) error
	// Previous records the box's containers as they are, before a recreate
	// replaces them; nil when the box has none.
	Previous(ctx context.Context, box string) (Previous, error)
	// Observe lists the engine's labelled resources (and which of images
	// it holds).
	Observe(ctx context.Context, images ...string) (*Observed, error)
}

// Previous is a box's containers as they were before a recreate.
type Previous interface {
	// Restore replaces the box's current containers with the recorded ones
	// (same image, settings, names and labels; the volumes were never
	// touched) and starts those that ran. It reports whether any was started.
	Restore(ctx context.Context) (started bool, err error)
}

// Runner runs a command in a running container as user, and returns its
// exit code once its output has ended.
type Runner interface {
	Run(ctx context.Context, container, user string, cmd []string, stdout, stderr io.Writer) (int, error)
}

// Inside is what saves, restores and moves need inside a box.
type Inside interface {
	Runner
	Capabilities() Capabilities
	// ContainerID is box's one container of service, running or not.
	ContainerID(ctx context.Context, box, service string) (string, error)
	// CopyFrom streams path of container id out, as a tar stream.
	CopyFrom(ctx context.Context, id, path string) (io.ReadCloser, error)
	// CopyTo streams the tar stream content into dir of container id.
	CopyTo(ctx context.Context, id, dir string, content io.Reader) error
	ToolVersions(ctx context.Context, image string) (map[string]string, error)
	// Pause freezes every process of container id; Unpause thaws them,
	// and does nothing to a container not paused (an engine with
	// Capabilities().Freeze).
	Pause(ctx context.Context, id string) error
	Unpause(ctx context.Context, id string) error
	// VolumeRoom is the room left, in bytes, where the engine makes box's
	// volumes, measured by a throwaway container of image.
	VolumeRoom(ctx context.Context, image, box string) (int64, error)
}

// Helpers is what snapshots and forks need: throwaway containers on a box's
// volumes.
type Helpers interface {
	Inside
	// RunHelper runs h in a new container, waits for it to end and removes
	// it by ID, whatever happens (a cancelled ctx included). It returns
	// what the container printed on stdout; a non-zero exit is an
	// *ExitError. A volume mounted read-only that the engine lacks is
	// ErrNoVolume, and one to make (HelperMount.Labels) that it has is
	// ErrVolumeExists; nothing is run then.
	RunHelper(ctx context.Context, h Helper) ([]byte, error)
	RemoveVolume(ctx context.Context, name string) error
}

// Helper is a short-lived container that works on a box's volumes: it runs
// Cmd as root, with no network, in image Image, labelled as box Box's
// one-off, and, when it writes snapshot Snapshot of the box, with that
// label too.
type Helper struct {
	Box, Image, Snapshot string
	Mounts               []HelperMount
	Cmd                  []string
}

// HelperMount is a volume mounted into a helper at Target.
type HelperMount struct {
	Volume, Target string
	ReadOnly       bool
	// Labels, when set, make the volume anew with these labels as the
	// helper container is created: the volume and the helper that writes
	// it appear at once, so that no kill leaves the one without the other.
	Labels map[string]string
}

// ExitError is a helper that exited with Code, having printed Stderr.
type ExitError struct {
	Code   int
	Stderr string
}

func (e *ExitError) Error() string {
	if e.Stderr == "" {
		return fmt.Sprintf("the helper container exited %d", e.Code)
	}
	return fmt.Sprintf("the helper container exited %d: %s", e.Code, e.Stderr)
}

// VolumeSize is a measured volume: Bytes, or why it could not be read.
type VolumeSize struct {
	Bytes  int64
	Unread string
}

// VolumeSizer measures volumes on one engine, from inside the containers of
// the snapshot that mount them.
type VolumeSizer interface {
	VolumeSizes(ctx context.Context, o *Observed, volumes []string) map[string]VolumeSize
}

// The refusals the workflows branch on; an engine makes its own errors
// match them (errors.Is).
var (
	// ErrUnreachable: the engine could not be reached, or went away
	// mid-request, as opposed to one that answered with an error.
	ErrUnreachable = errors.New("the engine could not be reached")
	// ErrRaced: an engine's refusal of what a request of a killed apply,
	// still in flight when this one observed, made since: a second network
	// of the box's network name, or a container name taken.
	ErrRaced = errors.New("a request of an interrupted apply landed after the plan")
	// ErrNoVolume is a volume to read that the engine does not have.
	ErrNoVolume = errors.New("no such volume")
	// ErrVolumeExists is a volume to make whose name is taken.
	ErrVolumeExists = errors.New("a volume of that name exists")
)
