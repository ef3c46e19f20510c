package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/benchtable"
	"github.com/hermes-box/boxes/pool"
)

// leaseClaims is how many claims BenchmarkPoolLease times.
const leaseClaims = 20

// agent-sandbox's warm-pool claim latency as published (the issue "What
// boxes itself costs" quotes it): not measured here.
const (
	sandboxClaimP50 = 92 * time.Millisecond
	sandboxClaimP90 = 182 * time.Millisecond
)

// BenchmarkPoolLease measures leases on the local engine: boxes lease from
// a warm pool (the whole command, a process of the real binary; median and
// 90th percentile of leaseClaims claims) against its floor: the start-up
// floor's whole run (internal/initfloor, see BenchmarkStartup) and then a
// container created by name through the API, the one engine call no claim
// can do without; each claim is timed beside one of these, so that a load
// that comes and goes weighs on both. A second floor is the calls a claim
// cannot ask the engine less than (the version check, the pool's list, the
// create, the executor's inspect for its token) after the start-up floor's
// run, timed beside each claim too. The same figures are set beside
// agent-sandbox's published claim latency (published, not measured). Between
// claims the claim's marker is removed through the API, untimed: the box
// is free again as it was (a release would reset it: 2 s, and a box just
// started). Then boxes release of a leased box (the box deleted and made
// again, ready: the pool's size is raised by one before each, so that it
// makes one box) against boxes rm of a free box and an apply that makes
// it again (the same work by two commands; median of 3 each). The
// engine's default address pools hold about 30 networks, two a box: the
// pool keeps 6 boxes.
func BenchmarkPoolLease(b *testing.B) {
	image := realEngineBench(b)
	const poolName = "it-bench-pool"
	removePool(poolName)
	b.Cleanup(func() { removePool(poolName) })
	floor := floorBinary(b)
	bin := benchBinary(b)
	dir := b.TempDir()
	config := filepath.Join(dir, "boxes.yaml")
	size := func(n int) {
		writeBench(b, config, fmt.Sprintf("version: 1\nfleet: it\npools:\n  %s: {size: %d}\n", poolName, n))
	}
	size(6)
	run := func(args ...string) (time.Duration, []byte) {
		b.Helper()
		var out, errb bytes.Buffer
		cmd := exec.Command(bin, append([]string{"-f", config}, args...)...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		start := time.Now()
		err := cmd.Run()
		took := time.Since(start)
		if err != nil {
			b.Fatalf("boxes %v: %v\n%s%s", args, err, out.Bytes(), errb.Bytes())
		}
		return took, out.Bytes()
	}
	run("lock", "image", image)
	run("apply", "--auto-approve")
	made := time.Now()
	// Three boxes leased, for the releases below.
	for i := range 3 {
		run("lease", poolName, "--holder", fmt.Sprintf("bench-held-%d", i))
	}

	api, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		b.Fatal(err)
	}
	defer api.Close()
	ctx := context.Background()
	create := func() time.Duration {
		b.Helper()
		start := time.Now()
		c, err := api.ContainerCreate(ctx, &container.Config{Image: image, Entrypoint: []string{"true"}}, &container.HostConfig{NetworkMode: "none"}, nil, nil,
			fmt.Sprintf("hbl-%s-bench-create", poolName))
		took := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if err := api.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil {
			b.Fatal(err)
		}
		return took
	}
	// calls is the engine's part of a claim's floor of calls: what a claim
	// cannot ask the engine less than, made through a new API client as a
	// command's are: the version check (a ping), the pool's list by its
	// labels, a container created by name, the executor's inspect (its
	// token). Untimed, the container is removed again.
	calls := func() time.Duration {
		b.Helper()
		start := time.Now()
		c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		ping, err := c.Ping(ctx)
		if err != nil {
			b.Fatal(err)
		}
		c.NegotiateAPIVersionPing(ping)
		cs, err := c.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(
			filters.Arg("label", compose.FleetLabel+"=it"), filters.Arg("label", compose.PoolLabel+"="+poolName))})
		if err != nil {
			b.Fatal(err)
		}
		made, err := c.ContainerCreate(ctx, &container.Config{Image: image, Entrypoint: []string{"true"}}, &container.HostConfig{NetworkMode: "none"}, nil, nil,
			fmt.Sprintf("hbl-%s-bench-calls", poolName))
		if err != nil {
			b.Fatal(err)
		}
		executor := ""
		for _, x := range cs {
			if x.Labels[compose.ComposeServiceLabel] == compose.ExecutorService {
				executor = x.ID
				break
			}
		}
		if _, err := c.ContainerInspect(ctx, executor); err != nil {
			b.Fatalf("the executor's inspect (%d of the pool's containers listed): %v", len(cs), err)
		}
		took := time.Since(start)
		if err := c.ContainerRemove(ctx, made.ID, container.RemoveOptions{Force: true}); err != nil {
			b.Fatal(err)
		}
		return took
	}
	// unclaim removes box's claim marker, by ID.
	unclaim := func(box string) {
		b.Helper()
		marks, err := api.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(
			filters.Arg("label", compose.LeaseBoxLabel+"="+box), filters.Arg("label", compose.LeaseLabel+"="+engine.LeaseClaim))})
		if err != nil || len(marks) != 1 {
			b.Fatalf("the claim of %s: %v, %d markers", box, err, len(marks))
		}
		if err := api.ContainerRemove(ctx, marks[0].ID, container.RemoveOptions{Force: true}); err != nil {
			b.Fatal(err)
		}
	}
	claim := func(i int) time.Duration {
		b.Helper()
		took, out := run("lease", poolName, "--holder", fmt.Sprintf("bench-%d", i), "--json")
		var row pool.LeaseRow
		if err := json.Unmarshal(out, &row); err != nil || row.Box == "" {
			b.Fatalf("lease --json: %v\n%s", err, out)
		}
		unclaim(row.Box)
		return took
	}
	// A warm pool: its boxes up for longer than a look at the engine
	// inspects a container just started for (10 s), the binaries read once.
	time.Sleep(time.Until(made.Add(11 * time.Second)))
	claim(-1)
	timedRun(b, floor)
	create()
	calls()

	var claims, floors, quietFloors, creates, callFloors []time.Duration
	for i := range leaseClaims {
		claims = append(claims, claim(i))
		start, c := timedRun(b, floor), create()
		creates = append(creates, c)
		floors = append(floors, start+c)
		quietFloors = append(quietFloors, timedRunEnv(b, quietCollector, floor)+create())
		callFloors = append(callFloors, timedRun(b, floor)+calls())
	}

	var leased, free []string
	_, out := run("leases", "--json")
	var rows []pool.LeaseRow
	if err := json.Unmarshal(out, &rows); err != nil {
		b.Fatal(err)
	}
	for _, r := range rows {
		switch r.State {
		case "leased":
			leased = append(leased, r.Box)
		case "free":
			free = append(free, r.Box)
		}
	}
	if len(leased) != 3 || len(free) != 3 {
		b.Fatalf("leases after the claims: %s", out)
	}
	var releases, remakes []time.Duration
	for i, box := range leased {
		size(len(free) + 1 + i)
		took, _ := run("release", box)
		releases = append(releases, took)
	}
	for range 3 {
		// The pool's first free box, made again by the apply under its name.
		took, _ := run("rm", free[0], "--confirm", free[0])
		again, _ := run("apply", "--auto-approve")
		remakes = append(remakes, took+again)
	}
	b.Logf("claims %v\nfloors (start-up floor + create) %v; creates %v\nfloors of a claim's calls %v\nreleases %v; rm and apply %v", claims, floors, creates, callFloors, releases, remakes)
	n := len(claims)
	benchtable.Report(b, benchtable.Row{Figure: fmt.Sprintf("boxes lease from a warm pool (median of %d)", n), Value: ms(median(claims)), Unit: "ms",
		Baseline: "its floor: the start-up floor's run, then a container created by name through the API", Base: ms(median(floors))})
	benchtable.Report(b, benchtable.Row{Figure: fmt.Sprintf("boxes lease from a warm pool (90th percentile of %d)", n), Value: ms(percentile(claims, 90)), Unit: "ms",
		Baseline: "its floor (90th percentile)", Base: ms(percentile(floors, 90))})
	benchtable.Report(b, benchtable.Row{Figure: fmt.Sprintf("boxes lease from a warm pool (median of %d)", n), Value: ms(median(claims)), Unit: "ms",
		Baseline: "its floor, the start-up floor run with the collector off as boxes starts (GOGC=off GOMEMLIMIT=256MiB)", Base: ms(median(quietFloors))})
	benchtable.Report(b, benchtable.Row{Figure: fmt.Sprintf("boxes lease from a warm pool (median of %d)", n), Value: ms(median(claims)), Unit: "ms",
		Baseline: "the floor of its calls: the start-up floor's run, then a ping, the pool's list, a create by name and an inspect through a new API client", Base: ms(median(callFloors))})
	benchtable.Report(b, benchtable.Row{Figure: fmt.Sprintf("boxes lease from a warm pool (median of %d)", n), Value: ms(median(claims)), Unit: "ms",
		Baseline: "agent-sandbox's warm-pool claim, p50 as published (not measured here)", Base: ms(sandboxClaimP50)})
	benchtable.Report(b, benchtable.Row{Figure: fmt.Sprintf("boxes lease from a warm pool (90th percentile of %d)", n), Value: ms(percentile(claims, 90)), Unit: "ms",
		Baseline: "agent-sandbox's warm-pool claim, p90 as published (not measured here)", Base: ms(sandboxClaimP90)})
	benchtable.Report(b, benchtable.Row{Figure: "boxes release: the box reset and ready (median of 3)", Value: median(releases).Seconds(), Unit: "s",
		Baseline: "boxes rm of a free box, then apply making it again", Base: median(remakes).Seconds()})
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// percentile is the p-th percentile of ds, the nearest rank.
func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (p*len(s)+99)/100 - 1
	return s[max(i, 0)]
}

func writeBench(b *testing.B, path, content string) {
	b.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		b.Fatal(err)
	}
}
