package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/docker/docker/client"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/spec"
)

// createDuplicateNetwork makes a network named name with labels the way
// an engine does when two creates of one name race: the engine's own
// duplicate check is skipped (CheckDuplicate false), as it is in effect
// for a create that was still in flight when a killed apply's successor
// looked. The Go client always asks for the check on API 1.41, so the
// request is sent by hand.
func createDuplicateNetwork(t *testing.T, name string, labels map[string]string) string {
	t.Helper()
	e, err := docker.Connect(context.Background(), spec.Host{}, docker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	base := "http://docker"
	if u, err := client.ParseHostURL(e.Client().DaemonHost()); err == nil && u.Scheme == "tcp" {
		base = "http://" + u.Host
	}
	body, _ := json.Marshal(map[string]any{"Name": name, "Driver": "bridge", "CheckDuplicate": false, "Labels": labels})
	resp, err := e.Client().HTTPClient().Post(base+"/v1.41/networks/create", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("creating a second network %s: %s %s", name, resp.Status, out)
	}
	var created struct{ Id string }
	if err := json.Unmarshal(out, &created); err != nil {
		t.Fatal(err)
	}
	return created.Id
}

// networkLabels reads the labels of the box's network.
func networkLabels(t *testing.T, name string) map[string]string {
	t.Helper()
	var labels map[string]string
	if err := json.Unmarshal([]byte(dockerOut(t, "network", "inspect", "-f", "{{json .Labels}}", name)), &labels); err != nil {
		t.Fatal(err)
	}
	return labels
}

// boxNetworks are the IDs of the networks labelled as box's that bear its
// network's name (its inside network is another name).
func boxNetworks(t *testing.T, box string) []string {
	t.Helper()
	var ids []string
	for _, line := range strings.Split(dockerOut(t, "network", "ls", "--no-trunc", "--format", "{{.ID}} {{.Name}}", "--filter", "label="+compose.BoxLabel+"="+box), "\n") {
		if id, name, ok := strings.Cut(line, " "); ok && name == compose.NetworkName(box) {
			ids = append(ids, id)
		}
	}
	return ids
}

// TestIntegrationDuplicateNetwork: two networks with a box's network name
// and labels (left by a create racing a killed apply's create still in
// flight) are drift the plan names, and apply removes the one no container
// uses and converges, the box's data kept. Real engine: the engine itself
// makes the second network, with its duplicate check off, and the agent
// must still resolve its executor once compose is done.
func TestIntegrationDuplicateNetwork(t *testing.T) {
	image, _ := startIntegration(t)
	const box = "it-h11a-dup"
	removeBoxes(box)
	t.Cleanup(func() { removeBoxes(box) })
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), fmt.Sprintf("version: 1\nboxes:\n  %s: {}\n", box))
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock: %+v", r)
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	agent := compose.ContainerName(box, compose.AgentService)
	dockerOut(t, "exec", agent, "sh", "-c", "echo kept > /data/marker")
	network := compose.NetworkName(box)
	labels := networkLabels(t, network)

	converge := func(t *testing.T) {
		t.Helper()
		r := boxes(t, dir, "plan", "--detailed-exitcode")
		if r.code != 2 || !strings.Contains(r.stdout, "2 networks named "+network) {
			t.Fatalf("plan does not see the second network: %+v", r)
		}
		t.Logf("plan: %s", r.stdout)
		if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
			t.Fatalf("apply with two networks: %+v", r)
		}
		if r := boxes(t, dir, "plan", "--detailed-exitcode"); r.code != 0 {
			t.Fatalf("plan after converging: %+v", r)
		}
		if n := boxNetworks(t, box); len(n) != 1 {
			t.Fatalf("networks after converging: %v, want one", n)
		}
		if got := dockerOut(t, "exec", agent, "cat", "/data/marker"); got != "kept" {
			t.Fatalf("marker after converging: %q", got)
		}
		if got := dockerOut(t, "exec", agent, "getent", "hosts", "executor"); got == "" {
			t.Fatal("the agent does not resolve its executor")
		}
	}

	t.Run("running box", func(t *testing.T) {
		used := boxNetworks(t, box)
		stray := createDuplicateNetwork(t, network, labels)
		converge(t)
		if got := boxNetworks(t, box); got[0] != used[0] || got[0] == stray {
			t.Fatalf("apply kept network %s, want the one in use %s (stray %s)", got[0], used[0], stray)
		}
	})

	t.Run("containers never created", func(t *testing.T) {
		// An apply killed after the network was made twice, before any container.
		for _, s := range []string{compose.AgentService, compose.ExecutorService} {
			dockerOut(t, "rm", "-f", compose.ContainerName(box, s))
		}
		createDuplicateNetwork(t, network, labels)
		converge(t)
	})
}

// TestIntegrationRacedNetwork: a killed apply's network create still in
// flight lands while the next apply creates the box, so the engine holds
// two networks of the box's name that the plan never saw (made here by a
// proxy in front of the engine, which makes the second one, with the
// engine's duplicate check off, right after it forwards apply's own).
// Apply removes the second network and what it made on it, makes the
// containers again and succeeds; the next plan is empty. Real engine: the
// network lands while compose creates the box, and what apply must recover
// from is compose's start failing on the engine.
func TestIntegrationRacedNetwork(t *testing.T) {
	image, _ := startIntegration(t)
	const box = "it-h11a-race"
	removeBoxes(box)
	t.Cleanup(func() { removeBoxes(box) })
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nboxes:\n  "+box+": {}\n")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	var raced atomic.Bool
	host := engineProxy(t, func(w http.ResponseWriter, r *http.Request, forward http.Handler) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/networks/create") || raced.Load() {
			forward.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Name   string
			Labels map[string]string
		}
		_ = json.Unmarshal(body, &req)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		forward.ServeHTTP(w, r)
		if req.Name == compose.NetworkName(box) && raced.CompareAndSwap(false, true) {
			createDuplicateNetwork(t, req.Name, req.Labels)
		}
	})
	t.Setenv("DOCKER_HOST", host)
	r := boxes(t, dir, "apply", "--auto-approve")
	os.Unsetenv("DOCKER_HOST")
	if !raced.Load() {
		t.Fatalf("the proxy never saw the box's network created: %+v", r)
	}
	if r.code != 0 || !strings.Contains(r.stderr+r.stdout, "request landed after the plan") {
		t.Fatalf("apply with a second network landing during it: %+v", r)
	}
	t.Logf("apply:\n%s", r.stdout)
	if ids := boxNetworks(t, box); len(ids) != 1 {
		t.Errorf("%s has %d networks, want 1", box, len(ids))
	}
	if p := boxes(t, dir, "plan", "--detailed-exitcode"); p.code != 0 {
		t.Errorf("plan after the apply: %+v", p)
	}
	if got := dockerOut(t, "inspect", "-f", "{{.State.Status}}", compose.ContainerName(box, compose.AgentService)); got != "running" {
		t.Errorf("agent is %s", got)
	}
}
