package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/docker/cli/cli/config"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/hermes-box/boxes/cmd/boxes/cli"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/statedir"
)

// poolEngine answers the Docker engine API for a warm pool of boxes, as a
// Docker engine would the calls a lease may make (and those of a whole
// observation, empty), and records every request it is sent.
type poolEngine struct {
	mu         sync.Mutex
	containers []container.Summary
	env        map[string][]string // by container ID
	requests   []string            // "METHOD /path", the API version left out
}

var apiVersion = regexp.MustCompile(`^/v[0-9.]+/`)

func (e *poolEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	path := apiVersion.ReplaceAllString(r.URL.Path, "/")
	e.requests = append(e.requests, r.Method+" "+path)
	w.Header().Set("Api-Version", "1.41")
	w.Header().Set("Content-Type", "application/json")
	reply := func(status int, v any) {
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	switch {
	case path == "/_ping":
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "OK")
	case path == "/info":
		reply(http.StatusOK, map[string]any{"ID": "POOL", "Name": "pool-engine", "NCPU": 2, "MemTotal": 8 << 30})
	case path == "/volumes":
		reply(http.StatusOK, map[string]any{"Volumes": []any{}})
	case path == "/networks":
		reply(http.StatusOK, []any{})
	case strings.HasPrefix(path, "/images/"):
		reply(http.StatusNotFound, map[string]string{"message": "No such image"})
	case path == "/containers/json" && r.Method == http.MethodGet:
		args, err := filters.FromJSON(r.URL.Query().Get("filters"))
		if err != nil {
			reply(http.StatusBadRequest, map[string]string{"message": err.Error()})
			return
		}
		var out []container.Summary
		for _, c := range e.containers {
			if args.MatchKVList("label", c.Labels) {
				out = append(out, c)
			}
		}
		reply(http.StatusOK, out)
	case path == "/containers/create" && r.Method == http.MethodPost:
		name := r.URL.Query().Get("name")
		var body container.Config
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			reply(http.StatusBadRequest, map[string]string{"message": err.Error()})
			return
		}
		for _, c := range e.containers {
			if c.Names[0] == "/"+name {
				reply(http.StatusConflict, map[string]string{"message": fmt.Sprintf("Conflict. The container name %q is already in use", "/"+name)})
				return
			}
		}
		id := fmt.Sprintf("%064x", len(e.containers)+1)
		e.containers = append(e.containers, container.Summary{ID: id, Names: []string{"/" + name}, Image: body.Image, Labels: maps.Clone(body.Labels), State: "created", Status: "Created"})
		reply(http.StatusCreated, map[string]any{"Id": id, "Warnings": []string{}})
	case strings.HasPrefix(path, "/containers/") && strings.HasSuffix(path, "/json") && r.Method == http.MethodGet:
		id := strings.TrimSuffix(strings.TrimPrefix(path, "/containers/"), "/json")
		for _, c := range e.containers {
			if c.ID == id {
				reply(http.StatusOK, map[string]any{"Id": id, "Name": c.Names[0], "Config": map[string]any{"Env": e.env[id], "Labels": c.Labels},
					"State": map[string]any{"Status": c.State, "Running": c.State == "running"}})
				return
			}
		}
		reply(http.StatusNotFound, map[string]string{"message": "No such container: " + id})
	default:
		reply(http.StatusNotImplemented, map[string]string{"message": "not served here: " + r.Method + " " + path})
	}
}

// warmPoolEngine is an engine holding the boxes of pool (of fleet) named
// in boxes, each with its three containers running for hours, the
// executor publishing its port and carrying token.
func warmPoolEngine(fleet, pool, token string, boxes ...string) *poolEngine {
	e := &poolEngine{env: map[string][]string{}}
	for _, box := range boxes {
		for _, svc := range compose.Services {
			id := fmt.Sprintf("%064x", len(e.containers)+1)
			labels := compose.Labels(box)
			maps.Copy(labels, map[string]string{compose.FleetLabel: fleet, compose.PoolLabel: pool, "com.docker.compose.service": svc,
				"com.docker.compose.project": compose.ProjectName(box)})
			c := container.Summary{ID: id, Names: []string{"/" + compose.ContainerName(box, svc)}, Image: "hermes-box-lite:test",
				ImageID: "sha256:" + strings.Repeat("ab", 32), Labels: labels, State: "running", Status: "Up 3 hours"}
			if svc == compose.ExecutorService {
				c.Ports = []container.Port{{IP: "127.0.0.1", PrivatePort: compose.ExecutorPort, PublicPort: 40123, Type: "tcp"}}
				e.env[id] = []string{"PATH=/usr/bin", compose.TokenVar + "=" + token}
			}
			e.containers = append(e.containers, c)
		}
	}
	return e
}

// TestLeaseEngineCalls: boxes lease from a warm pool asks the Docker
// engine, through the shipped client, for no more than a claim needs: the
// version (a ping), one list of the pool's containers, the claim's
// container, and the executor's environment for the token. Not docker
// info, not the volumes, networks or images, nor any other box.
func TestLeaseEngineCalls(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	pool := "calls"
	e := warmPoolEngine("leasecalls", pool, token, spec.PoolBoxName(pool, 1), spec.PoolBoxName(pool, 2))
	// Another fleet's pool of the same name, and a box of no pool: not
	// asked about.
	other := warmPoolEngine("elsewhere", pool, token, spec.PoolBoxName(pool, 1)+"x", "loner")
	e.containers = append(e.containers, other.containers...)
	// On a socket, as the local engine is: its boxes' ports are reached here.
	sock := filepath.Join(t.TempDir(), "docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(e)
	srv.Listener = l
	srv.Start()
	defer srv.Close()
	t.Setenv("DOCKER_HOST", "unix://"+sock)
	for _, v := range []string{"DOCKER_CONTEXT", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH", "DOCKER_API_VERSION"} {
		t.Setenv(v, "")
	}
	configDir := t.TempDir()
	oldConfig := config.Dir()
	config.SetDir(configDir)
	t.Cleanup(func() { config.SetDir(oldConfig) })
	t.Setenv("DOCKER_CONFIG", configDir)

	dir := t.TempDir()
	file := filepath.Join(dir, "boxes.yaml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf("version: 1\nfleet: leasecalls\npools:\n  %s: {size: 2}\n", pool)), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := cli.MainWith(context.Background(), cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb},
		[]string{"-f", file, "lease", pool, "--holder", "ci", "--json"}, cli.DefaultConnectors())
	if code != 0 {
		t.Fatalf("boxes lease: exit %d\n%s%s", code, out.String(), errb.String())
	}
	var row struct{ Box, Executor string }
	if err := json.Unmarshal(out.Bytes(), &row); err != nil || row.Box != spec.PoolBoxName(pool, 1) || row.Executor != "http://127.0.0.1:40123" {
		t.Errorf("lease --json: %v\n%s", err, out.String())
	}
	if got, ok, err := (statedir.Beside(file).Tokens()).Get(row.Box); !ok || err != nil || got != token {
		t.Errorf("token stored: %q %v %v", got, ok, err)
	}

	executor := e.containers[1].ID // the first box's executor
	want := []string{
		"HEAD /_ping",
		"GET /containers/json",
		"POST /containers/create",
		"GET /containers/" + executor + "/json",
	}
	e.mu.Lock()
	got := e.requests
	e.mu.Unlock()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("a lease from a warm pool sent %d requests:\n  %s\nwant %d:\n  %s", len(got), strings.Join(got, "\n  "), len(want), strings.Join(want, "\n  "))
	}
}

// TestLeaseFleetCalls: on fake engines, a lease from a warm pool asks its
// pool's host alone, the same calls whatever the fleet's size: one look at
// the pool (not the host's whole observation), the claim, the token.
func TestLeaseFleetCalls(t *testing.T) {
	f := newSimFleet(t, simShape{Hosts: 3, Pools: 2}, nil)
	want := "Connect 1, ContainerEnv 1, CreateLeaseMark 1, ObservePool 1"
	for _, n := range []int{10, 300} {
		f.grow(n)
		f.conn.ResetCalls()
		f.run("lease", "pool0", "--holder", "calls")
		for host, calls := range f.conn.Calls() {
			if got := callsText(calls); host != f.hosts[0] || got != want {
				t.Errorf("%d boxes: a lease of pool0 (on host %s) asked host %q: %s; want %s of host %s alone", n, f.hosts[0], host, got, want, f.hosts[0])
			}
		}
		if len(f.conn.Calls()) == 0 {
			t.Errorf("%d boxes: the lease made no call", n)
		}
	}
}
