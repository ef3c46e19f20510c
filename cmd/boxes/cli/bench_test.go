package cli_test

// The benchmarks of make bench. Each reports its figures as rows of the one
// table (internal/benchtable), every figure next to a baseline measured in
// the same run: boxes against itself at another size, against the raw
// engine API doing the same work, and against docker compose. Run with
// -benchtime 1x (scripts/bench.sh does): one real measurement of each.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/docker/go-connections/nat"

	"github.com/hermes-box/boxes/cmd/boxes/cli"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/image"
	"github.com/hermes-box/boxes/image/build"
	"github.com/hermes-box/boxes/internal/benchtable"
	"github.com/hermes-box/boxes/mcp"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/workspace"
)

// benchParallelism is apply's default --parallelism, used by the raw API
// baseline too.
const benchParallelism = 4

// benchImage is the test image (make test-image); the benchmark skips
// under -short and fails without the image.
func benchImage(b *testing.B) string {
	b.Helper()
	if testing.Short() {
		b.Skip("real Docker engine")
	}
	ref := os.Getenv("BOXES_TEST_IMAGE")
	if ref == "" {
		ref = "hermes-box-lite:test"
	}
	if out, err := exec.Command("docker", "image", "inspect", "-f", "{{.Id}}", ref).CombinedOutput(); err != nil {
		b.Fatalf("test image %s missing (run make test-image): %s", ref, out)
	}
	return ref
}

// benchNames are it-bench0 … it-bench(n-1).
func benchNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("it-bench%d", i)
	}
	return names
}

// benchFleet is a boxes.yaml in a directory of its own, locked to the test image.
type benchFleet struct {
	b   *testing.B
	dir string
}

func newBenchFleet(b *testing.B, image string) *benchFleet {
	b.Helper()
	f := &benchFleet{b: b, dir: b.TempDir()}
	f.declare("", nil, nil)
	f.run("lock", "image", image)
	return f
}

func (f *benchFleet) file() string { return filepath.Join(f.dir, "boxes.yaml") }

// declare writes boxes.yaml: hosts (a YAML mapping body, may be ""), then
// the boxes, each with its line's settings (nil: {}).
func (f *benchFleet) declare(hosts string, names []string, settings map[string]string) {
	f.b.Helper()
	var sb strings.Builder
	sb.WriteString("version: 1\nfleet: it\n")
	if hosts != "" {
		sb.WriteString("hosts:\n" + hosts)
	}
	sb.WriteString("boxes:")
	if len(names) == 0 {
		sb.WriteString(" {}")
	}
	sb.WriteString("\n")
	for _, n := range names {
		s := settings[n]
		if s == "" {
			s = "{}"
		}
		fmt.Fprintf(&sb, "  %s: %s\n", n, s)
	}
	if err := os.WriteFile(f.file(), []byte(sb.String()), 0o644); err != nil {
		f.b.Fatal(err)
	}
}

// run runs boxes with args on the fleet, fails the benchmark unless it
// exits 0, and returns how long it took and what it printed.
func (f *benchFleet) run(args ...string) (time.Duration, string) {
	f.b.Helper()
	var out, errb bytes.Buffer
	start := time.Now()
	code := cli.Main(cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, append([]string{"-f", f.file()}, args...))
	took := time.Since(start)
	if code != 0 {
		f.b.Fatalf("boxes %s: exit %d\n%s\n%s", strings.Join(args, " "), code, out.String(), errb.String())
	}
	return took, out.String()
}

// plan opens the workspace with API calls counted, plans, and returns the
// time from opening (so connecting is in it, as in boxes plan) and the calls
// sent to each host's engine.
func (f *benchFleet) plan() (time.Duration, map[string]int64) {
	f.b.Helper()
	took, _, calls := f.planTwice()
	return took, calls
}

// planMedian is planTwice k times, with the median of each time: plans
// take milliseconds, where one run is mostly noise.
func (f *benchFleet) planMedian(k int) (first, again time.Duration, calls map[string]int64) {
	f.b.Helper()
	firsts, agains := make([]time.Duration, k), make([]time.Duration, k)
	for i := range k {
		firsts[i], agains[i], calls = f.planTwice()
	}
	return median(firsts), median(agains), calls
}

func median(ds []time.Duration) time.Duration {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// planTwice is plan, and then the time of a second plan in the same
// workspace, its engines connected.
func (f *benchFleet) planTwice() (first, again time.Duration, calls map[string]int64) {
	f.b.Helper()
	ctx := context.Background()
	start := time.Now()
	counted := &countingConnector{engines: map[string]*docker.Engine{}}
	ws, err := workspace.Open(f.file(), workspace.Options{Connect: counted})
	if err != nil {
		f.b.Fatal(err)
	}
	defer ws.Close()
	if _, err := ws.Plan(ctx, reconcile.PlanOptions{}); err != nil {
		f.b.Fatal(err)
	}
	first = time.Since(start)
	calls = map[string]int64{}
	for host, d := range counted.engines {
		calls[host] = d.Calls()
	}
	start = time.Now()
	if _, err := ws.Plan(ctx, reconcile.PlanOptions{}); err != nil {
		f.b.Fatal(err)
	}
	return first, time.Since(start), calls
}

// countingConnector connects Docker engines that count their API calls,
// and keeps them by host.
type countingConnector struct{ engines map[string]*docker.Engine }

func (c *countingConnector) Connect(ctx context.Context, h spec.Host) (engine.Engine, error) {
	e, err := docker.Connect(ctx, h, docker.Options{CountCalls: true})
	if err != nil {
		return nil, err
	}
	c.engines[h.Name] = e
	return e, nil
}

// removeBench removes every container, volume and network labelled with
// one of the box names, on the local engine.
func removeBench(names ...string) {
	ctx := context.Background()
	api, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return
	}
	defer api.Close()
	removeBoxesOn(ctx, api, names...)
}

// removeBoxesOn removes every container, volume and network of the named
// boxes (by their label) that api's engine has.
func removeBoxesOn(ctx context.Context, api client.APIClient, names ...string) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	managed := filters.NewArgs(filters.Arg("label", compose.ManagedLabel+"=1"))
	if cs, err := api.ContainerList(ctx, container.ListOptions{All: true, Filters: managed}); err == nil {
		for _, c := range cs {
			if want[c.Labels[compose.BoxLabel]] {
				_ = api.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
			}
		}
	}
	if vs, err := api.VolumeList(ctx, volume.ListOptions{Filters: managed}); err == nil {
		for _, v := range vs.Volumes {
			if want[v.Labels[compose.BoxLabel]] {
				_ = api.VolumeRemove(ctx, v.Name, true)
			}
		}
	}
	if ns, err := api.NetworkList(ctx, network.ListOptions{Filters: managed}); err == nil {
		for _, n := range ns {
			if want[n.Labels[compose.BoxLabel]] {
				_ = api.NetworkRemove(ctx, n.ID)
			}
		}
	}
}

// cleanBench removes names before the benchmark and after it, also when it fails.
func cleanBench(b *testing.B, names ...string) {
	removeBench(names...)
	b.Cleanup(func() { removeBench(names...) })
}

func seconds(d time.Duration) float64 { return d.Seconds() }

// BenchmarkPlan: plan of 1, 10 and 50 declared boxes (none created yet):
// time (the median of 5), connecting included, and Docker API calls,
// against the plan of 1 box.
func BenchmarkPlan(b *testing.B) {
	image := benchImage(b)
	sizes := []int{1, 10, 50}
	took := map[int]time.Duration{}
	calls := map[int]int64{}
	for _, n := range sizes {
		names := benchNames(n)
		cleanBench(b, names...)
		f := newBenchFleet(b, image)
		f.declare("", names, nil)
		f.plan() // warm: the first plan of the process pays for loading the client
		for i := 0; i < b.N; i++ {
			t, _, c := f.planMedian(5)
			took[n] += t
			calls[n] += c[""]
		}
	}
	N := float64(b.N)
	for _, n := range sizes {
		r := benchtable.Row{Figure: "plan, 1 box to create", Value: seconds(took[n]) / N, Unit: "s"}
		if n != 1 {
			r.Figure, r.Baseline, r.Base = fmt.Sprintf("plan, %d boxes to create", n), "plan, 1 box", seconds(took[1])/N
		}
		benchtable.Report(b, r)
	}
	for _, n := range sizes {
		r := benchtable.Row{Figure: "plan, 1 box: API calls", Value: float64(calls[n]) / N, Unit: "calls"}
		if n != 1 {
			r.Figure, r.Baseline, r.Base = fmt.Sprintf("plan, %d boxes: API calls", n), "plan, 1 box", float64(calls[1])/N
		}
		benchtable.Report(b, r)
	}
}

// BenchmarkApply: one box created by boxes apply to its readiness (the
// executor's authenticated MCP answer, hb init done, the gate answering)
// against the raw engine API making the same box (rawFullBox: three
// containers, two networks, from the very compose project boxes makes) to
// the same readiness, and against the raw API making two containers and one
// network to the executor's first answer (rawBox: the box before the
// network door, which keeps the door's cost in sight); 10 boxes against
// both at the same parallelism and against docker compose up -d of the
// boxes' own compose files (boxes compose NAME), one project after another
// and all at once; a no-op apply against a plan of the same boxes; a plan
// with a delete against the same plan without it. With -benchtime Nx each
// figure is the median of N runs.
func BenchmarkApply(b *testing.B) {
	const n = 10
	image := benchImage(b)
	names := benchNames(n)
	cleanBench(b, names...)
	f := newBenchFleet(b, image)
	ctx := context.Background()
	api, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		b.Fatal(err)
	}
	defer api.Close()
	haveCompose := exec.Command("docker", "compose", "version").Run() == nil

	var one, rawOne, fairOne, ten, rawTen, fairTen, composeSeq, composeAll, noop, plan, withDelete, withoutDelete []time.Duration
	timed := func(to *[]time.Duration, fn func() error) {
		b.Helper()
		start := time.Now()
		if err := fn(); err != nil {
			b.Fatal(err)
		}
		*to = append(*to, time.Since(start))
		removeBench(names...)
	}
	for i := 0; i < b.N; i++ {
		// One box: apply, then the raw API, the whole box and the two
		// containers.
		f.declare("", names[:1], nil)
		projects := f.projects(api, image, names[:1])
		timed(&one, func() error { f.run("apply", "--auto-approve"); return nil })
		timed(&fairOne, func() error { return rawBoxesOf(ctx, api, projects, rawToken, 1) })
		timed(&rawOne, func() error { return rawBoxes(ctx, api, image, names[:1], 1) })

		// Ten boxes: apply; then, with the ten up, plan, a no-op apply,
		// and a plan that deletes one (with its volumes' sizes).
		f.declare("", names, nil)
		projects = f.projects(api, image, names)
		t, _ := f.run("apply", "--auto-approve", "--parallelism", fmt.Sprint(benchParallelism))
		ten = append(ten, t)
		t, out := f.run("plan")
		if !strings.Contains(out, "No changes.") {
			b.Fatalf("plan after apply is not empty:\n%s", out)
		}
		plan = append(plan, t)
		t, _ = f.run("apply", "--auto-approve")
		noop = append(noop, t)
		t, _ = f.run("plan")
		withoutDelete = append(withoutDelete, t)
		f.declare("", names[:n-1], nil)
		t, out = f.run("plan")
		if !strings.Contains(out, names[n-1]) {
			b.Fatalf("plan does not delete %s:\n%s", names[n-1], out)
		}
		withDelete = append(withDelete, t)

		// The compose files, written while the lock names the image.
		files := make([]string, n)
		if haveCompose {
			f.declare("", names, nil)
			for j, name := range names {
				_, yaml := f.run("compose", name)
				files[j] = filepath.Join(f.dir, name+".compose.yaml")
				if err := os.WriteFile(files[j], []byte(yaml), 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
		removeBench(names...)

		timed(&fairTen, func() error { return rawBoxesOf(ctx, api, projects, rawToken, benchParallelism) })
		timed(&rawTen, func() error { return rawBoxes(ctx, api, image, names, benchParallelism) })

		if haveCompose {
			timed(&composeSeq, func() error {
				for _, file := range files {
					if err := composeUp(file); err != nil {
						return err
					}
				}
				return nil
			})
			timed(&composeAll, func() error {
				errs := make(chan error, n)
				for _, file := range files {
					go func() { errs <- composeUp(file) }()
				}
				var first error
				for range files {
					if err := <-errs; err != nil && first == nil {
						first = err
					}
				}
				return first
			})
		}
	}
	med := func(ds []time.Duration) float64 { return seconds(median(ds)) }
	tenApply := fmt.Sprintf("boxes apply, %d new boxes (--parallelism %d), to readiness", n, benchParallelism)
	rows := []benchtable.Row{
		{Figure: "boxes apply, 1 new box, to readiness (MCP answer, hb init, gate)", Value: med(one), Unit: "s",
			Baseline: "raw engine API: the same box (3 containers, 2 networks), created, started, same readiness", Base: med(fairOne)},
		{Figure: "boxes apply, 1 new box, to readiness (MCP answer, hb init, gate)", Value: med(one), Unit: "s",
			Baseline: "raw engine API: 2 containers, 1 network, to the first MCP answer (no door)", Base: med(rawOne)},
		{Figure: tenApply, Value: med(ten), Unit: "s",
			Baseline: fmt.Sprintf("raw engine API: the same %d boxes, %d at a time, same readiness", n, benchParallelism), Base: med(fairTen)},
		{Figure: tenApply, Value: med(ten), Unit: "s",
			Baseline: fmt.Sprintf("raw engine API: 2 containers, 1 network each, %d at a time, to MCP answers (no door)", benchParallelism), Base: med(rawTen)},
	}
	if haveCompose {
		rows = append(rows,
			benchtable.Row{Figure: tenApply, Value: med(ten), Unit: "s",
				Baseline: fmt.Sprintf("docker compose up -d, %d projects one after another (no readiness wait)", n), Base: med(composeSeq)},
			benchtable.Row{Figure: tenApply, Value: med(ten), Unit: "s",
				Baseline: fmt.Sprintf("docker compose up -d, %d projects all at once (no readiness wait)", n), Base: med(composeAll)})
	} else {
		b.Log("docker compose is not installed (.ci/run builds it): no compose rows")
	}
	rows = append(rows,
		benchtable.Row{Figure: fmt.Sprintf("no-op apply, %d boxes", n), Value: med(noop), Unit: "s",
			Baseline: fmt.Sprintf("boxes plan, the same %d boxes", n), Base: med(plan)},
		benchtable.Row{Figure: fmt.Sprintf("plan deleting 1 of %d boxes (volume sizes)", n), Value: med(withDelete), Unit: "s",
			Baseline: "the same plan without the delete", Base: med(withoutDelete)},
	)
	for _, r := range rows {
		benchtable.Report(b, r)
	}
}

// rawToken is the raw baseline's boxes' token.
const rawToken = "bench-token-not-secret"

// projects are the compose projects boxes makes for the named boxes, as
// boxes.yaml declares them now, made from image with rawToken: what the
// raw API baseline makes.
func (f *benchFleet) projects(api client.APIClient, image string, names []string) []*types.Project {
	f.b.Helper()
	ctx := context.Background()
	img, err := api.ImageInspect(ctx, image)
	if err != nil {
		f.b.Fatal(err)
	}
	ws, err := workspace.Open(f.file(), workspace.Options{Connect: docker.Connector{}})
	if err != nil {
		f.b.Fatal(err)
	}
	defer ws.Close()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	doors, unread := ws.Doors(ctx, want)
	var out []*types.Project
	for _, name := range names {
		box, ok := ws.Config.Box(name)
		if !ok || unread[name] != nil {
			f.b.Fatalf("box %s: declared %v, %v", name, ok, unread[name])
		}
		door := doors[name]
		if door.Closed, err = ws.ClosedAddresses(box.Host); err != nil {
			f.b.Fatal(err)
		}
		p, err := compose.Project(compose.Input{Box: box, Image: img.ID, Token: rawToken, WorkDir: f.dir, ConfigFile: f.file(), Door: door})
		if err != nil {
			f.b.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// composeUp runs docker compose up -d on one box's compose file.
func composeUp(file string) error {
	out, err := exec.Command("docker", "compose", "-f", file, "up", "-d", "--quiet-pull").CombinedOutput()
	if err != nil {
		return fmt.Errorf("docker compose -f %s up -d: %v\n%s", file, err, out)
	}
	return nil
}

// rawBoxes makes what a box was before the network door with plain engine
// API calls, parallel boxes at a time: its network, its two volumes, its
// executor and agent containers, both started; then it waits for the
// executor's first answer to an authenticated MCP initialize, polled as
// often as boxes polls it. Against rawBoxesOf it shows the door's cost.
func rawBoxes(ctx context.Context, api *client.Client, image string, names []string, parallel int) error {
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = rawBox(ctx, api, image, name)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func rawBox(ctx context.Context, api *client.Client, image, box string) error {
	const token = "bench-token-not-secret"
	labels := compose.Labels(box)
	netName := compose.NetworkName(box)
	if _, err := api.NetworkCreate(ctx, netName, network.CreateOptions{Labels: labels}); err != nil {
		return err
	}
	var executorID string
	for _, svc := range []string{compose.ExecutorService, compose.AgentService} {
		vol := compose.VolumeName(box, map[string]string{compose.AgentService: compose.AgentVolume, compose.ExecutorService: compose.ExecutorVolume}[svc])
		if _, err := api.VolumeCreate(ctx, volume.CreateOptions{Name: vol, Labels: labels}); err != nil {
			return err
		}
		init := true
		cfg := &container.Config{
			Hostname:   svc,
			Image:      image,
			Labels:     labels,
			Entrypoint: []string{compose.HB, svc},
			Env:        []string{compose.TokenVar + "=" + token, "BOX_NAME=" + box},
		}
		hc := &container.HostConfig{
			Init:          &init,
			NetworkMode:   container.NetworkMode(netName),
			Mounts:        []mount.Mount{{Type: mount.TypeVolume, Source: vol, Target: "/data"}},
			RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyUnlessStopped},
			Sysctls:       map[string]string{"net.ipv6.conf.all.disable_ipv6": "1"},
		}
		port := nat.Port(fmt.Sprintf("%d/tcp", compose.ExecutorPort))
		if svc == compose.ExecutorService {
			cfg.ExposedPorts = nat.PortSet{port: {}}
			hc.PortBindings = nat.PortMap{port: {{HostIP: "127.0.0.1"}}}
		}
		nc := &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{netName: {Aliases: []string{svc}}}}
		c, err := api.ContainerCreate(ctx, cfg, hc, nc, nil, compose.ContainerName(box, svc))
		if err != nil {
			return err
		}
		if err := api.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
			return err
		}
		if svc == compose.ExecutorService {
			executorID = c.ID
		}
	}
	info, err := api.ContainerInspect(ctx, executorID)
	if err != nil {
		return err
	}
	bindings := info.NetworkSettings.Ports[nat.Port(fmt.Sprintf("%d/tcp", compose.ExecutorPort))]
	if len(bindings) == 0 {
		return fmt.Errorf("%s: the executor publishes no port", box)
	}
	url := fmt.Sprintf("http://127.0.0.1:%s/mcp", bindings[0].HostPort)
	deadline := time.Now().Add(docker.ReadyTimeout)
	for try := 0; ; try++ {
		err := mcp.Initialize(ctx, url, token)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: no MCP answer at %s: %w", box, url, err)
		}
		time.Sleep(docker.PollAfter(try))
	}
}

// BenchmarkBuild: boxes build from the offline recipe with the lock current
// (nothing to do), and after a guest edit (the assets layer only) against
// after a provision edit (the tools layer too: what provisioning every box
// at create would cost each time). The ratio is the point of the two layers.
func BenchmarkBuild(b *testing.B) {
	benchImage(b)
	base := os.Getenv("BOXES_TEST_BASE")
	if base == "" {
		base = "hermes-box-lite-base:bookworm"
	}
	var current, assets, tools time.Duration
	for i := 0; i < b.N; i++ {
		f := &benchFleet{b: b, dir: b.TempDir()}
		f.declare("", nil, nil)
		recipe := b.TempDir()
		if err := os.CopyFS(recipe, image.Recipe); err != nil {
			b.Fatal(err)
		}
		timed := func() time.Duration {
			t, out := f.run("build", "--json", "--offline", "--base", base, "--recipe", recipe, "--tag", "hermes-box-lite:it-bench-build")
			var rep build.Result
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", rep.Image).Run() })
			return t
		}
		timed()
		current += timed()
		benchAppend(b, filepath.Join(recipe, "guest", "profile.sh"))
		assets += timed()
		benchAppend(b, filepath.Join(recipe, "provision", "lib.sh"))
		tools += timed()
	}
	N := float64(b.N)
	benchtable.Report(b, benchtable.Row{Figure: "boxes build, lock current (nothing to build)", Value: seconds(current) / N, Unit: "s"})
	benchtable.Report(b, benchtable.Row{Figure: "boxes build after a guest edit (assets layer)", Value: seconds(assets) / N, Unit: "s",
		Baseline: "after a provision edit (tools layer too)", Base: seconds(tools) / N})
}

func benchAppend(b *testing.B, path string) {
	b.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "# bench %d\n", time.Now().UnixNano())
}
