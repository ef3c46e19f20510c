package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/docker/docker/api/types/container"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/internal/benchtable"
	"github.com/hermes-box/boxes/internal/testhost"
	"github.com/hermes-box/boxes/spec"
)

// BenchmarkGate measures what the network door costs (median of 5 each):
// a new box reaching ready (executor answering, hb init done, and its gate
// answering) against the same box made without a gate (its project minus
// the gate, the agent back on the box's network) and against a box as made
// before the network door (that, and the agent started after the
// executor), all made by the engine calls apply makes; a request from the agent through the gate to a server
// of the made-up internet against the same request made directly from the
// gate's container (the median of 30 curls each, curl's own time); and the
// gate container's memory. Beside them, the floor this engine sets: three
// bare containers (no network, no volume) started at once against two, the
// cost of a third container of any kind.
func BenchmarkGate(b *testing.B) {
	image := benchImage(b)
	const box = "it-bench-gate"
	cleanBench(b, box)
	testhost.StartInternet(b, nil)
	ctx := context.Background()
	e, err := docker.Connect(ctx, spec.Host{}, docker.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	id, err := e.ImageID(ctx, image)
	if err != nil {
		b.Fatal(err)
	}
	var with, without, before []time.Duration
	for i := 0; i < 5*b.N; i++ {
		// With the gate last: the requests below go through it.
		before = append(before, readyTime(b, e, box, id, withoutGate, true))
		without = append(without, readyTime(b, e, box, id, withoutGate, false))
		with = append(with, readyTime(b, e, box, id, nil, false))
	}
	through := curlTimes(b, compose.ContainerName(box, compose.AgentService), "")
	direct := curlTimes(b, compose.ContainerName(box, compose.GateService), "--noproxy *")
	memory := gateMemory(b, e, compose.ContainerName(box, compose.GateService))
	var three, two []time.Duration
	for i := 0; i < 5*b.N; i++ {
		two = append(two, startAtOnce(b, e, image, 2))
		three = append(three, startAtOnce(b, e, image, 3))
	}
	b.Logf("ready with a gate %v, without %v, as made before the door %v; a request through it %v, direct %v; the gate's memory %.1f MiB", median(with), median(without), median(before), through, direct, memory)
	benchtable.Report(b, benchtable.Row{Figure: "a new box ready, with its gate", Value: median(with).Seconds(), Unit: "s", Baseline: "the same box without a gate", Base: median(without).Seconds()})
	benchtable.Report(b, benchtable.Row{Figure: "a new box ready, with its gate", Value: median(with).Seconds(), Unit: "s", Baseline: "a box as made before the network door", Base: median(before).Seconds()})
	benchtable.Report(b, benchtable.Row{Figure: "a request through the gate (median of 30)", Value: through * 1000, Unit: "ms", Baseline: "the same request made directly", Base: direct * 1000})
	benchtable.Report(b, benchtable.Row{Figure: "the gate's memory, one box", Value: memory, Unit: "MiB"})
	benchtable.Report(b, benchtable.Row{Figure: "three bare containers started at once", Value: median(three).Seconds(), Unit: "s", Baseline: "two", Base: median(two).Seconds()})
}

// readyTime makes box from scratch, its project changed by change unless
// nil, and times it from the create to ready; the box is left running for
// the next step. ordered starts the agent once the executor has, as
// compose did for a box made before the network door; else, as apply does,
// every container at once.
func readyTime(b *testing.B, e *docker.Engine, box, image string, change func(*types.Project), ordered bool) time.Duration {
	b.Helper()
	ctx := context.Background()
	removeBench(box)
	p, err := compose.Project(compose.Input{Box: spec.Box{Name: box, Fleet: "it-bench"}, Image: image, Token: "bench-token",
		WorkDir: b.TempDir(), ConfigFile: filepath.Join(b.TempDir(), "boxes.yaml")})
	if err != nil {
		b.Fatal(err)
	}
	if change != nil {
		change(p)
	}
	_, gated := p.Services[compose.GateService]
	start := time.Now()
	if err := e.Create(ctx, p, false); err != nil {
		b.Fatal(err)
	}
	starts := []*types.Project{p}
	if ordered {
		starts = []*types.Project{only(p, compose.ExecutorService), only(p, compose.AgentService)}
	}
	for _, q := range starts {
		if err := e.Start(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := e.WaitReady(ctx, box, "bench-token"); err != nil {
		b.Fatal(err)
	}
	// As WaitInit: the gate checked beside the agent's hb init.
	gate := make(chan error, 1)
	go func() {
		if !gated {
			gate <- nil
			return
		}
		gate <- waitZero(e, box, compose.GateService, "", []string{compose.GateBinary, "gate", "--health"})
	}()
	if err := waitZero(e, box, compose.AgentService, "root", []string{hb.Path, "health", compose.AgentService}); err != nil {
		b.Fatal(err)
	}
	if err := <-gate; err != nil {
		b.Fatal(err)
	}
	// As WaitInit: then the agent trusts the gate's authority.
	if gated {
		id, err := e.ContainerID(ctx, box, compose.AgentService)
		if err != nil {
			b.Fatal(err)
		}
		if code, err := e.Run(ctx, id, "root", []string{hb.Path, "trust", "--wait", "5"}, nil, nil); err != nil || code != 0 {
			b.Fatalf("hb trust: exit %d, %v", code, err)
		}
	}
	return time.Since(start)
}

// withoutGate is p as a box was before the network door: no gate, the agent
// on the box's network.
func withoutGate(p *types.Project) {
	delete(p.Services, compose.GateService)
	agent := p.Services[compose.AgentService]
	agent.Networks = map[string]*types.ServiceNetworkConfig{compose.Network: nil}
	delete(agent.DependsOn, compose.GateService)
	p.Services[compose.AgentService] = agent
	exec := p.Services[compose.ExecutorService]
	exec.Networks = map[string]*types.ServiceNetworkConfig{compose.Network: nil}
	p.Services[compose.ExecutorService] = exec
	delete(p.Networks, compose.InsideNetwork)
}

// only is p with its service name alone.
func only(p *types.Project, name string) *types.Project {
	q := *p
	q.Services = types.Services{name: p.Services[name]}
	return &q
}

func waitZero(e *docker.Engine, box, service, user string, cmd []string) error {
	ctx := context.Background()
	id, err := e.ContainerID(ctx, box, service)
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if code, err := e.Run(ctx, id, user, cmd, nil, nil); err == nil && code == 0 {
			return nil
		}
	}
	return fmt.Errorf("%s of %s never passed %v", service, box, cmd)
}

// startAtOnce times starting n bare containers of image at once: no
// network, no volume, only sleep. They are removed, by ID, before it returns.
func startAtOnce(b *testing.B, e *docker.Engine, image string, n int) time.Duration {
	b.Helper()
	ctx := context.Background()
	api := e.Client()
	var ids []string
	defer func() {
		for _, id := range ids {
			_ = api.ContainerRemove(ctx, id, container.RemoveOptions{Force: true})
		}
	}()
	for i := 0; i < n; i++ {
		c, err := api.ContainerCreate(ctx, &container.Config{Image: image, Entrypoint: []string{"sleep", "60"}},
			&container.HostConfig{NetworkMode: "none"}, nil, nil, "")
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, c.ID)
	}
	start := time.Now()
	errs := make(chan error, n)
	for _, id := range ids {
		go func() { errs <- api.ContainerStart(ctx, id, container.StartOptions{}) }()
	}
	for range ids {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

// curlTimes is the median of 30 requests' total times (s), as curl measures
// them, made in container with extra curl flags.
func curlTimes(b *testing.B, container, extra string) float64 {
	b.Helper()
	script := fmt.Sprintf("for i in $(seq 30); do curl -s %s -o /dev/null -w '%%{time_total}\\n' http://%s/; done", strings.ReplaceAll(extra, "*", "'*'"), testhost.WebA)
	out := dockerOutB(b, "exec", container, "sh", "-c", script)
	var ts []time.Duration
	for _, f := range strings.Fields(out) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || v == 0 {
			b.Fatalf("curl in %s: %q", container, out)
		}
		ts = append(ts, time.Duration(v*float64(time.Second)))
	}
	return median(ts).Seconds()
}

// gateMemory is the gate container's memory use, in MiB, as the engine's
// stats report it.
func gateMemory(b *testing.B, e *docker.Engine, name string) float64 {
	b.Helper()
	resp, err := e.Client().ContainerStatsOneShot(context.Background(), name)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var s container.StatsResponse
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		b.Fatal(err)
	}
	return float64(s.MemoryStats.Usage-s.MemoryStats.Stats["cache"]) / (1 << 20)
}

func dockerOutB(b *testing.B, args ...string) string {
	b.Helper()
	var out bytes.Buffer
	cmd := exec.Command("docker", args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		b.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}
