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
	networks   map[string]map[string]string
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
			Name   string
			Labels map[string]string
		}
		body(&req)
		e.networks[req.Name] = req.Labels
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
			engine := &fakeEngine{containers: map[string]createRequest{}, volumes: map[string]map[string]string{}, networks: map[string]map[string]string{}}
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
			for _, svc := range []string{AgentService, ExecutorService} {
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
				if !slices.Contains(req.Env, TokenVar+"="+testToken) || !slices.Contains(req.Env, "BOX_NAME="+name) {
					t.Errorf("%s: env %v lacks the token or the box name", svc, req.Env)
				}
				h := req.HostConfig
				if h.NanoCPUs != int64(in.Box.CPUs*1e9) || h.Memory != in.Box.Memory {
					t.Errorf("%s: NanoCPUs %d Memory %d, want %v cpus %d bytes", svc, h.NanoCPUs, h.Memory, in.Box.CPUs, in.Box.Memory)
				}
				if h.Init == nil || !*h.Init || h.RestartPolicy.Name != container.RestartPolicyUnlessStopped || h.Privileged {
					t.Errorf("%s: init %v restart %v privileged %v", svc, h.Init, h.RestartPolicy, h.Privileged)
				}
				if h.Runtime != in.Box.Runtime || h.Sysctls["net.ipv6.conf.all.disable_ipv6"] != "1" {
					t.Errorf("%s: runtime %q sysctls %v", svc, h.Runtime, h.Sysctls)
				}
				// Compose passes a plain named volume as a bind of its name, not of a path.
				volume := VolumeName(name, map[string]string{AgentService: AgentVolume, ExecutorService: ExecutorVolume}[svc])
				if len(h.Mounts) != 0 || len(h.Binds) != 1 || h.Binds[0] != volume+":/data:rw" {
					t.Errorf("%s: binds %v mounts %+v, want only %s at /data", svc, h.Binds, h.Mounts, volume)
				}
				if string(h.NetworkMode) != NetworkName(name) {
					t.Errorf("%s: network mode %q", svc, h.NetworkMode)
				}
				if svc == AgentService && len(h.PortBindings) != 0 {
					t.Errorf("agent publishes %v", h.PortBindings)
				}
				if svc == ExecutorService {
					b := h.PortBindings["4788/tcp"]
					if len(h.PortBindings) != 1 || len(b) != 1 || b[0].HostIP != in.Box.Executor.Bind || b[0].HostPort != published(in) {
						t.Errorf("executor publishes %v, want %s:%s", h.PortBindings, in.Box.Executor.Bind, published(in))
					}
				}
			}
			for _, v := range []string{AgentVolume, ExecutorVolume} {
				if l, ok := engine.volumes[VolumeName(name, v)]; !ok || l[ManagedLabel] != "1" || l[BoxLabel] != name {
					t.Errorf("volume %s: created %v labels %v", VolumeName(name, v), ok, l)
				}
			}
			if l, ok := engine.networks[NetworkName(name)]; !ok || l[ManagedLabel] != "1" || l[BoxLabel] != name {
				t.Errorf("network %s: created %v labels %v", NetworkName(name), ok, l)
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
