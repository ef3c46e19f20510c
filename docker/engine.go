// Package docker is the only package that holds a Docker engine client. It
// observes labelled resources and applies compose projects through the
// docker/compose library.
package docker

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/cli/cli/command"
	cliflags "github.com/docker/cli/cli/flags"
	"github.com/docker/compose/v2/pkg/api"
	composesvc "github.com/docker/compose/v2/pkg/compose"
	"github.com/docker/compose/v2/pkg/progress"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/versions"
	"github.com/docker/docker/client"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/spec"
)

// Engine is one Docker engine: a box host.
type Engine struct {
	// Host is the boxes.yaml host name; "" is the local engine.
	Host string
	// Endpoint is how the engine was reached.
	Endpoint Endpoint
	api      client.APIClient
	// compose is docker/compose's service on api, made when a command
	// first creates, starts or stops a project: most commands (ls, lease,
	// exec, doctor) never do.
	compose func() (api.Compose, error)
	calls   *atomic.Int64

	// info is what docker info says, read once, when first needed
	// (Observe, ID): docker info is the engine's slowest answer, several
	// milliseconds, and a command that only lists some containers (a
	// lease) does not need it.
	infoMu sync.Mutex
	info   *engineInfo
}

// engineInfo is what boxes reads of docker info.
type engineInfo struct {
	id, name string
	// cpus and memory are the machine's (NCPU and MemTotal).
	cpus   int
	memory int64
	// runtimes are the names of the engine's OCI runtimes, sorted.
	runtimes []string
}

// Options tune how an engine is reached.
type Options struct {
	// CountCalls makes the engine count every HTTP request it sends (benchmarks).
	CountCalls bool
	// Trace, with CountCalls, is told of every request once its answer's
	// headers are in (benchmarks: a timeline of an apply's calls). It may
	// be called from several goroutines at once.
	Trace func(Call)
}

// Call is one API request as Options.Trace is told of it.
type Call struct {
	Method string
	// Path is the request's path without the API version, e.g. /containers/create.
	Path  string
	Start time.Time
	// Took is the time to the answer's headers: for a stream (an exec's
	// output, logs) not its end.
	Took time.Duration
	Err  error
}

// MinAPIVersion is the oldest engine API boxes works with (Docker Engine 20.10).
const MinAPIVersion = "1.41"

// Connect reaches the engine of host: its docker: address, its docker context,
// or for the local host ("") the environment's DOCKER_HOST / DOCKER_CONTEXT /
// default socket. The address is resolved and checked first (see Resolve), then
// the engine must answer within ConnectTimeout; every error names the host.
func Connect(ctx context.Context, host spec.Host, opts Options) (*Engine, error) {
	ep, err := Resolve(host)
	if err != nil {
		return nil, err
	}
	return ConnectEndpoint(ctx, ep, opts)
}

// ConnectEndpoint reaches a resolved endpoint and checks that an engine
// boxes can work with answers there.
func ConnectEndpoint(ctx context.Context, ep Endpoint, opts Options) (*Engine, error) {
	// Compose's own progress output would interleave with ours.
	progress.Mode = progress.ModeQuiet

	e := &Engine{Host: ep.Host, Endpoint: ep, calls: new(atomic.Int64)}
	apiOpts := append(slices.Clip(ep.opts), client.WithAPIVersionNegotiation())
	if opts.CountCalls {
		apiOpts = append(apiOpts, countCalls(e.calls, opts.Trace))
	}
	c, err := client.NewClientWithOpts(apiOpts...)
	if err != nil {
		return nil, &HostError{Host: ep.Host, URL: ep.URL, Err: err}
	}
	if err := e.verify(ctx, c); err != nil {
		c.Close()
		return nil, err
	}
	e.api = c
	// Connecting is not part of the work the calls count.
	e.calls.Store(0)

	e.compose = sync.OnceValues(func() (api.Compose, error) {
		cli, err := command.NewDockerCli(command.WithOutputStream(io.Discard), command.WithErrorStream(io.Discard))
		if err != nil {
			return nil, err
		}
		// The CLI gets our client, already verified, and the plain
		// address: given a context it would resolve it again itself, and
		// its lazy initialisation exits the process on any error.
		clientOpts := cliflags.NewClientOptions()
		clientOpts.Hosts = []string{ep.URL}
		if err := cli.Initialize(clientOpts, command.WithAPIClient(composeClient{APIClient: c})); err != nil {
			return nil, &HostError{Host: ep.Host, URL: ep.URL, Err: err}
		}
		return composesvc.NewComposeService(cli, composesvc.WithPrompt(decline)), nil
	})
	return e, nil
}

// verify pings the engine and negotiates the API version, within
// ConnectTimeout. Its identity is read when first needed (readInfo).
func (e *Engine) verify(ctx context.Context, c *client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	began := time.Now()
	ping, err := c.Ping(ctx)
	if err != nil {
		return e.Endpoint.explain(ctx, time.Since(began), err)
	}
	if ping.APIVersion != "" && versions.LessThan(ping.APIVersion, MinAPIVersion) {
		return &HostError{Host: e.Host, URL: e.Endpoint.URL,
			Err:  fmt.Errorf("the engine speaks API %s; boxes needs %s (Docker Engine 20.10) or newer", ping.APIVersion, MinAPIVersion),
			Hint: "upgrade Docker Engine on that machine"}
	}
	c.NegotiateAPIVersionPing(ping)
	return nil
}

// readInfo reads docker info the first time it is called successfully,
// and returns what it read.
func (e *Engine) readInfo(ctx context.Context) (engineInfo, error) {
	e.infoMu.Lock()
	defer e.infoMu.Unlock()
	if e.info != nil {
		return *e.info, nil
	}
	info, err := e.api.Info(ctx)
	if err != nil {
		return engineInfo{}, err
	}
	in := &engineInfo{id: info.ID, name: info.Name, cpus: info.NCPU, memory: info.MemTotal}
	for name := range info.Runtimes {
		in.runtimes = append(in.runtimes, name)
	}
	sort.Strings(in.runtimes)
	e.info = in
	return *in, nil
}

// infoNow is readInfo for the methods that take no context, within
// ConnectTimeout; an engine that does not answer has no ID or name. Every
// workflow that compares IDs has observed the engines first, which read it.
func (e *Engine) infoNow() engineInfo {
	ctx, cancel := context.WithTimeout(context.Background(), ConnectTimeout)
	defer cancel()
	in, _ := e.readInfo(ctx)
	return in
}

// ID is the engine's own ID (docker info): two hosts with one ID are one engine.
func (e *Engine) ID() string { return e.infoNow().id }

// Name is the engine's machine name (docker info), for messages.
func (e *Engine) Name() string { return e.infoNow().name }

// decline answers every compose prompt with no. Its one prompt on our path is
// "volume config diverged, recreate it?", and yes would lose the box's data;
// our own plan reports such divergence instead.
func decline(string, bool) (bool, error) { return false, nil }

// countCalls, the last option, wraps the client's transport in a
// countingTransport. The client picks https from the transport it is
// given, which the wrapper hides: the scheme is set here, as it would be.
func countCalls(calls *atomic.Int64, trace func(Call)) client.Opt {
	return func(c *client.Client) error {
		hc := c.HTTPClient()
		scheme := "http"
		if tr, ok := hc.Transport.(*http.Transport); ok && tr.TLSClientConfig != nil {
			scheme = "https"
		}
		hc.Transport = countingTransport{next: hc.Transport, calls: calls, trace: trace}
		if err := client.WithScheme(scheme)(c); err != nil {
			return err
		}
		return client.WithHTTPClient(hc)(c)
	}
}

type countingTransport struct {
	next  http.RoundTripper
	calls *atomic.Int64
	trace func(Call)
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	// The version negotiation ping is part of connecting, not of the work.
	if strings.HasSuffix(r.URL.Path, "/_ping") {
		return t.next.RoundTrip(r)
	}
	t.calls.Add(1)
	if t.trace == nil {
		return t.next.RoundTrip(r)
	}
	start := time.Now()
	resp, err := t.next.RoundTrip(r)
	t.trace(Call{Method: r.Method, Path: unversioned(r.URL.Path), Start: start, Took: time.Since(start), Err: err})
	return resp, err
}

// unversioned is an API path without its leading /vX.Y.
func unversioned(path string) string {
	if rest, ok := strings.CutPrefix(path, "/v"); ok {
		if i := strings.IndexByte(rest, '/'); i > 0 {
			return rest[i:]
		}
	}
	return path
}

// Calls is the number of API requests sent so far (with Options.CountCalls).
func (e *Engine) Calls() int64 { return e.calls.Load() }

// APIVersion is the API version negotiated with the engine.
func (e *Engine) APIVersion() string { return e.api.ClientVersion() }

// Client is the raw engine client, for callers in this package's tests and benchmarks.
func (e *Engine) Client() client.APIClient { return e.api }

// Capabilities: a Docker engine freezes containers (the cgroup freezer)
// and renames them.
func (e *Engine) Capabilities() engine.Capabilities {
	return engine.Capabilities{Freeze: true, Rename: true}
}

// Close releases the connection.
func (e *Engine) Close() error { return e.api.Close() }

// Create makes the project's network, volumes and containers without starting
// them. With force, existing containers are replaced even when compose sees no
// difference (volumes are always kept).
func (e *Engine) Create(ctx context.Context, p *types.Project, force bool) error {
	recreate := api.RecreateDiverged
	if force {
		recreate = api.RecreateForce
	}
	c, err := e.compose()
	if err != nil {
		return err
	}
	return e.raced(againOnFirewallRace(ctx, func() error {
		return c.Create(ctx, versioned(p), api.CreateOptions{
			Services:             p.ServiceNames(),
			Recreate:             recreate,
			RecreateDependencies: recreate,
			Inherit:              false,
			RemoveOrphans:        true,
			AssumeYes:            false,
		})
	}))
}

// Replace remakes the containers of the project's named services alone,
// whatever compose sees of them: the others, and what depends on these, are
// left as they run (a gate-only change leaves the agent's processes alone).
func (e *Engine) Replace(ctx context.Context, p *types.Project, services []string) error {
	c, err := e.compose()
	if err != nil {
		return err
	}
	return e.raced(againOnFirewallRace(ctx, func() error {
		return c.Create(ctx, versioned(p), api.CreateOptions{
			Services:             services,
			Recreate:             api.RecreateForce,
			RecreateDependencies: api.RecreateNever,
			Inherit:              false,
			RemoveOrphans:        false,
			AssumeYes:            false,
		})
	}))
}

// versioned is p with the linked compose library's version among each
// service's labels, as the compose CLI writes it (no part of the config hash).
func versioned(p *types.Project) *types.Project {
	q := *p
	q.Services = types.Services{}
	for name, s := range p.Services {
		s.CustomLabels = maps.Clone(s.CustomLabels).Add(api.VersionLabel, api.ComposeVersion)
		q.Services[name] = s
	}
	return &q
}

// Start starts the project's created or stopped containers and unpauses paused ones.
func (e *Engine) Start(ctx context.Context, p *types.Project) error {
	c, err := e.compose()
	if err != nil {
		return err
	}
	if err := e.unpause(ctx, p.Name); err != nil {
		return e.lost(err)
	}
	return explainRuntime(e.raced(againOnFirewallRace(ctx, func() error {
		return c.Start(ctx, p.Name, api.StartOptions{Project: atOnce(p), Services: p.ServiceNames()})
	})))
}

// atOnce is p with no service depending on another, so that compose starts
// them all at once: an ordered start waits for each dependency to be seen
// started, a whole container start on a small machine, and boxes waits for
// every container to answer anyway. The order of creation stays p's.
func atOnce(p *types.Project) *types.Project {
	q := *p
	q.Services = types.Services{}
	for name, s := range p.Services {
		s.DependsOn = nil
		q.Services[name] = s
	}
	return &q
}

// raced is lost, and marks as reconcile.ErrRaced the engine's refusals
// that a killed apply's late request causes: a network name matching two
// networks, a container name taken.
func (e *Engine) raced(err error) error {
	err = e.lost(err)
	if err == nil {
		return nil
	}
	if s := err.Error(); strings.Contains(s, "is ambiguous") || strings.Contains(s, "is already in use by container") {
		return racedError{err}
	}
	return err
}

// racedError is err, matching reconcile.ErrRaced too; its message is err's.
type racedError struct{ err error }

func (r racedError) Error() string        { return r.err.Error() }
func (r racedError) Unwrap() error        { return r.err }
func (r racedError) Is(target error) bool { return target == engine.ErrRaced }

// Stop stops every container of project.
func (e *Engine) Stop(ctx context.Context, project string) error {
	c, err := e.compose()
	if err != nil {
		return err
	}
	return e.lost(c.Stop(ctx, project, api.StopOptions{}))
}

// RemoveContainer force-removes one container by ID (its anonymous volumes too; boxes has none).
func (e *Engine) RemoveContainer(ctx context.Context, id string) error {
	err := ignoreNotFound(e.api.ContainerRemove(ctx, id, containerRemoveOptions()))
	if err != nil && removalUnderWay(err) {
		// A killed apply's removal of it still runs in the engine:
		// it is done once the container is gone.
		err = e.waitGone(ctx, id)
	}
	return e.lost(err)
}

// removalUnderWay reports whether err is the engine's refusal to remove a
// container another request is removing.
func removalUnderWay(err error) bool {
	return strings.Contains(err.Error(), "is already in progress")
}

// waitGone returns once container id no longer exists, for up to a minute.
func (e *Engine) waitGone(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		_, err := e.api.ContainerInspect(ctx, id)
		switch {
		case cerrdefs.IsNotFound(err):
			return nil
		case err != nil && ctx.Err() == nil:
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("container %s is still being removed after a minute", id)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// RenameContainer gives the container named from the name to.
func (e *Engine) RenameContainer(ctx context.Context, from, to string) error {
	return e.lost(e.api.ContainerRename(ctx, from, to))
}

// RemoveNetwork removes one network by ID.
func (e *Engine) RemoveNetwork(ctx context.Context, id string) error {
	return e.lost(ignoreNotFound(e.api.NetworkRemove(ctx, id)))
}

// RemoveVolume removes one volume by name, and first the throwaway
// containers a killed command left mounting it (they would hold it).
func (e *Engine) RemoveVolume(ctx context.Context, name string) error {
	if err := e.removeOneOffs(ctx, name); err != nil {
		return e.lost(err)
	}
	return e.lost(ignoreNotFound(e.api.VolumeRemove(ctx, name, false)))
}

func ignoreNotFound(err error) error {
	if err != nil && cerrdefs.IsNotFound(err) {
		return nil
	}
	return err
}

// IsNotFound reports whether err is the engine's "no such object".
func IsNotFound(err error) bool { return cerrdefs.IsNotFound(err) }

func containerRemoveOptions() container.RemoveOptions {
	return container.RemoveOptions{Force: true, RemoveVolumes: false}
}

// ImageID resolves ref (a tag or an ID) to the image ID the engine has.
func (e *Engine) ImageID(ctx context.Context, ref string) (string, error) {
	img, err := e.api.ImageInspect(ctx, ref)
	if err != nil {
		if IsNotFound(err) {
			return "", fmt.Errorf("the engine has no image %s", ref)
		}
		return "", err
	}
	return img.ID, nil
}

// Tag points ref at image; a tag already there is moved.
func (e *Engine) Tag(ctx context.Context, image, ref string) error {
	return e.api.ImageTag(ctx, image, ref)
}

// LocalRegistryDigest asks the local engine's registry access for image's digest.
func LocalRegistryDigest(ctx context.Context, image string) (string, error) {
	e, err := Connect(ctx, spec.Host{}, Options{})
	if err != nil {
		return "", err
	}
	defer e.Close()
	return e.RegistryDigest(ctx, image)
}
