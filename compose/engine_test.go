package compose

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/docker/cli/cli/command"
	"github.com/docker/cli/cli/flags"
	"github.com/docker/compose/v2/pkg/api"
	dcompose "github.com/docker/compose/v2/pkg/compose"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
)

// fakeEngine answers the few Engine API calls compose's create path makes for
// a project on an empty engine, and records the containers it is asked to
// create. It stands in for a daemon to show what compose itself writes.
type fakeEngine struct {
	mu         sync.Mutex
	containers map[string]createRequest // by container name
	volumes    map[string]map[string]string
	networks   map[string]networkRequest
}

type networkRequest struct {
	Labels   map[string]string
	Internal bool
	Options  map[string]string
}

type createRequest struct {
	container.Config
	HostConfig       container.HostConfig
	NetworkingConfig network.NetworkingConfig
}

var apiPrefix = regexp.MustCompile(`^/v[0-9.]+`)

func (e *fakeEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := apiPrefix.ReplaceAllString(r.URL.Path, "")
	reply := func(v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	notFound := func() {
		w.WriteHeader(http.StatusNotFound)
		reply(map[string]string{"message": "no such object"})
	}
	body := func(v any) {
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, v)
	}
	switch {
	case p == "/_ping":
		w.Header().Set("Api-Version", "1.47")
		w.Header().Set("Ostype", "linux")
		_, _ = io.WriteString(w, "OK")
	case p == "/version":
		reply(map[string]string{"ApiVersion": "1.47", "Version": "27.5.0", "Os": "linux", "Arch": "amd64"})
	case p == "/info":
		reply(map[string]string{"OSType": "linux"})
	case strings.HasPrefix(p, "/images/") && strings.HasSuffix(p, "/json"):
		reply(map[string]any{"Id": testImage, "Os": "linux", "Architecture": "amd64"})
	case p == "/containers/json":
		reply([]any{})
	case p == "/containers/create":
		var req createRequest
		body(&req)
		name := r.URL.Query().Get("name")
		e.containers[name] = req
		reply(map[string]any{"Id": name, "Warnings": []string{}})
	case strings.HasPrefix(p, "/containers/") && strings.HasSuffix(p, "/json"):
		name := strings.TrimSuffix(strings.TrimPrefix(p, "/containers/"), "/json")
		req, ok := e.containers[name]
		if !ok {
			notFound()
			return
		}
		reply(map[string]any{"Id": name, "Name": "/" + name, "Config": req.Config, "NetworkSettings": map[string]any{"Networks": map[string]any{}}})
	case p == "/networks" && r.Method == http.MethodGet:
		reply([]any{})
	case p == "/networks/create":
		var req struct {
			Name string
			networkRequest
		}
		body(&req)
		e.networks[req.Name] = req.networkRequest
		reply(map[string]string{"Id": req.Name})
	case strings.HasPrefix(p, "/networks/"):
		notFound()
	case p == "/volumes/create":
		var req struct {
			Name   string
			Labels map[string]string
		}
		body(&req)
		e.volumes[req.Name] = req.Labels
		reply(map[string]any{"Name": req.Name, "Labels": req.Labels})
	case strings.HasPrefix(p, "/volumes/"):
		notFound()
	default:
		w.WriteHeader(http.StatusNotImplemented)
		reply(map[string]string{"message": "fake engine: " + r.Method + " " + p})
	}
}

// TestComposeWritesWhatWePredict creates each golden project through the
// docker/compose library against a fake engine: the containers carry exactly
// the config hash ServiceHashes predicts, the compose labels, and the host
// settings section 1 of the design asks for.
func TestComposeWritesWhatWePredict(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := c.in()
			engine := &fakeEngine{containers: map[string]createRequest{}, volumes: map[string]map[string]string{}, networks: map[string]networkRequest{}}
			srv := httptest.NewServer(engine)
			defer srv.Close()

			apiClient, err := client.NewClientWithOpts(client.WithHost("tcp://"+srv.Listener.Addr().String()), client.WithAPIVersionNegotiation())
			if err != nil {
				t.Fatal(err)
			}
			cli, err := command.NewDockerCli(command.WithOutputStream(io.Discard), command.WithErrorStream(io.Discard))
			if err != nil {
				t.Fatal(err)
			}
			if err := cli.Initialize(&flags.ClientOptions{ConfigDir: t.TempDir()}, command.WithAPIClient(apiClient)); err != nil {
				t.Fatal(err)
			}

			p := mustProject(t, in)
			want := mustHashes(t, p)
			if err := dcompose.NewComposeService(cli).Create(context.Background(), p, api.CreateOptions{}); err != nil {
				t.Fatalf("Create: %v", err)
			}

			name := in.Box.Name
			if len(engine.containers) != len(Services) {
				t.Errorf("compose created %v, want the %d containers of %v", keys(engine.containers), len(Services), Services)
			}
			for _, svc := range Services {
				req, ok := engine.containers[ContainerName(name, svc)]
				if !ok {
					t.Fatalf("no container %s created; got %v", ContainerName(name, svc), keys(engine.containers))
				}
				l := req.Labels
				if l[api.ConfigHashLabel] != want[svc] {
					t.Errorf("%s: compose wrote config hash %s, ServiceHashes predicted %s", svc, l[api.ConfigHashLabel], want[svc])
				}
				for k, v := range Labels(name) {
					if l[k] != v {
						t.Errorf("%s: label %s=%q", svc, k, l[k])
					}
				}
				for k, v := range map[string]string{
					api.ProjectLabel:     ProjectName(name),
					api.ServiceLabel:     svc,
					api.OneoffLabel:      "False",
					api.ImageDigestLabel: testImage,
				} {
					if l[k] != v {
						t.Errorf("%s: label %s=%q, want %q", svc, k, l[k], v)
					}
				}
				if !slices.Contains(req.Env, "BOX_NAME="+name) {
					t.Errorf("%s: env %v lacks the box name", svc, req.Env)
				}
				h := req.HostConfig
				if h.Init == nil || !*h.Init || h.RestartPolicy.Name != container.RestartPolicyUnlessStopped || h.Privileged {
					t.Errorf("%s: init %v restart %v privileged %v", svc, h.Init, h.RestartPolicy, h.Privileged)
				}
				if h.Sysctls["net.ipv6.conf.all.disable_ipv6"] != "1" || len(h.CapAdd) != 0 {
					t.Errorf("%s: sysctls %v cap_add %v", svc, h.Sysctls, h.CapAdd)
				}
				// The container joins exactly its networks at create: the
				// agent the inside one alone.
				nets := keys(req.NetworkingConfig.EndpointsConfig)
				slices.Sort(nets)
				if wantNets := ServiceNetworks(name, in.Box.Executor.Door, svc); !slices.Equal(nets, wantNets) || !slices.Contains(wantNets, string(h.NetworkMode)) {
					t.Errorf("%s: network mode %q endpoints %v, want %v", svc, h.NetworkMode, nets, wantNets)
				}
				for n, ep := range req.NetworkingConfig.EndpointsConfig {
					if ep == nil || !slices.Contains(ep.Aliases, svc) {
						t.Errorf("%s: not reachable as %s on %s", svc, svc, n)
					}
					// The executor's proxy is named on the executor's network alone.
					if ep != nil && slices.Contains(ep.Aliases, ExecutorGate) != (svc == GateService && n == ExecutorNetworkName(name)) {
						t.Errorf("%s on %s: aliases %v", svc, n, ep.Aliases)
					}
				}
				if svc != PortService(in.Box) && len(h.PortBindings) != 0 {
					t.Errorf("%s publishes %v", svc, h.PortBindings)
				}
				if svc == PortService(in.Box) {
					b := h.PortBindings["4788/tcp"]
					if len(h.PortBindings) != 1 || len(b) != 1 || b[0].HostIP != in.Box.Executor.Bind || b[0].HostPort != published(in) {
						t.Errorf("%s publishes %v, want %s:%s", svc, h.PortBindings, in.Box.Executor.Bind, published(in))
					}
				}
				switch svc {
				case GateService:
					if slices.ContainsFunc(req.Env, func(e string) bool { return strings.HasPrefix(e, TokenVar+"=") }) {
						t.Errorf("gate: env has the token")
					}
					if !slices.ContainsFunc(req.Env, func(e string) bool { return strings.HasPrefix(e, "BOXES_GATE={") }) {
						t.Errorf("gate: env %v lacks BOXES_GATE", req.Env)
					}
					if req.User != "65534:65534" || !h.ReadonlyRootfs || !slices.Equal(h.CapDrop, []string{"ALL"}) || !slices.Equal(h.SecurityOpt, []string{"no-new-privileges:true"}) {
						t.Errorf("gate: user %q read-only %v cap_drop %v security_opt %v", req.User, h.ReadonlyRootfs, h.CapDrop, h.SecurityOpt)
					}
					if h.NanoCPUs != 0 || h.Memory != 0 || h.Runtime != "" {
						t.Errorf("gate: NanoCPUs %d Memory %d runtime %q, want no limits and the engine's runtime", h.NanoCPUs, h.Memory, h.Runtime)
					}
					if len(h.Mounts) != 0 || len(h.Binds) != 0 {
						t.Errorf("gate: binds %v mounts %+v, want none", h.Binds, h.Mounts)
					}
					if strings.Join(req.Entrypoint, " ") != GateBinary+" gate" || req.Healthcheck == nil || strings.Join(req.Healthcheck.Test, " ") != "CMD "+GateBinary+" gate --health" {
						t.Errorf("gate: entrypoint %v healthcheck %+v", req.Entrypoint, req.Healthcheck)
					}
					var dns []string
					for _, a := range in.Box.DNS {
						dns = append(dns, a.String())
					}
					if !slices.Equal(h.DNS, dns) {
						t.Errorf("gate: dns %v, want %v", h.DNS, dns)
					}
					continue
				}
				if len(h.DNS) != 0 {
					t.Errorf("%s: dns %v: the box's name servers are the gate's", svc, h.DNS)
				}
				if !slices.Contains(req.Env, TokenVar+"="+testToken) {
					t.Errorf("%s: env %v lacks the token", svc, req.Env)
				}
				if h.NanoCPUs != int64(in.Box.CPUs*1e9) || h.Memory != in.Box.Memory {
					t.Errorf("%s: NanoCPUs %d Memory %d, want %v cpus %d bytes", svc, h.NanoCPUs, h.Memory, in.Box.CPUs, in.Box.Memory)
				}
				if h.Runtime != in.Box.Runtime {
					t.Errorf("%s: runtime %q", svc, h.Runtime)
				}
				// Compose passes a plain named volume as a bind of its name, not of a path.
				volume := VolumeName(name, map[string]string{AgentService: AgentVolume, ExecutorService: ExecutorVolume}[svc])
				if len(h.Mounts) != 0 || len(h.Binds) != 1 || h.Binds[0] != volume+":/data:rw" {
					t.Errorf("%s: binds %v mounts %+v, want only %s at /data", svc, h.Binds, h.Mounts, volume)
				}
				if svc == AgentService {
					// Docker spells a dropped capability CAP_NET_RAW or NET_RAW alike.
					if len(h.CapDrop) != 1 || strings.TrimPrefix(h.CapDrop[0], "CAP_") != "NET_RAW" {
						t.Errorf("agent: cap_drop %v, want NET_RAW", h.CapDrop)
					}
					for _, v := range []string{"HTTP_PROXY=" + GateURL, "HTTPS_PROXY=" + GateURL, "NO_PROXY=" + noProxy, "NODE_USE_ENV_PROXY=1"} {
						if !slices.Contains(req.Env, v) {
							t.Errorf("agent: env lacks %s", v)
						}
					}
				}
				if svc == ExecutorService {
					// Behind its door, it cannot forge packets either.
					wantDrop := 0
					if in.Box.Executor.Door {
						wantDrop = 1
					}
					if len(h.CapDrop) != wantDrop || (wantDrop == 1 && strings.TrimPrefix(h.CapDrop[0], "CAP_") != "NET_RAW") {
						t.Errorf("executor: cap_drop %v", h.CapDrop)
					}
				}
			}
			for _, v := range []string{AgentVolume, ExecutorVolume} {
				if l, ok := engine.volumes[VolumeName(name, v)]; !ok || l[ManagedLabel] != "1" || l[BoxLabel] != name {
					t.Errorf("volume %s: created %v labels %v", VolumeName(name, v), ok, l)
				}
			}
			if len(engine.volumes) != 2 {
				t.Errorf("volumes %v, want 2", keys(engine.volumes))
			}
			for _, n := range NetworkNames(name, in.Box.Executor.Door) {
				if req, ok := engine.networks[n]; !ok || req.Labels[ManagedLabel] != "1" || req.Labels[BoxLabel] != name {
					t.Errorf("network %s: created %v labels %v", n, ok, req.Labels)
				}
			}
			if len(engine.networks) != len(NetworkNames(name, in.Box.Executor.Door)) {
				t.Errorf("networks %v, want %v", keys(engine.networks), NetworkNames(name, in.Box.Executor.Door))
			}
			if n, ok := engine.networks[ExecutorNetworkName(name)]; ok && (!n.Internal || n.Options["com.docker.network.bridge.inhibit_ipv4"] != "true") {
				t.Errorf("network %s: internal %v options %v, want internal with inhibit_ipv4", ExecutorNetworkName(name), n.Internal, n.Options)
			}
			if n := engine.networks[NetworkName(name)]; n.Internal {
				t.Errorf("network %s is internal: the executor and the gate lose their way out", NetworkName(name))
			}
			if n := engine.networks[InsideNetworkName(name)]; !n.Internal || n.Options["com.docker.network.bridge.inhibit_ipv4"] != "true" {
				t.Errorf("network %s: internal %v options %v, want internal with inhibit_ipv4", InsideNetworkName(name), n.Internal, n.Options)
			}
		})
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
