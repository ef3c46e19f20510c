package cli

import (
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
	"github.com/docker/docker/client"

	"github.com/hermes-box/boxes/internal/benchtable"
	"github.com/hermes-box/boxes/pool"
)

// BenchmarkPoolLease measures leases on the local engine: boxes lease from
// a warm pool of 8 free boxes (the whole command, a process of the real
// binary: 6 claims, median and 90th percentile) against the one engine
// call a claim cannot do without (a container created by name, then
// removed, through the API, 10 times); and boxes release of a leased box
// (the box deleted and made again, ready: the pool's size is raised by one
// before each, so that it makes one box) against boxes rm of a free box
// and an apply that makes it again (the same work by two commands; median
// of 3 each). The engine's default address pools hold about 30 networks,
// two a box: the pool stays under 12 boxes.
func BenchmarkPoolLease(b *testing.B) {
	image := realEngineBench(b)
	const poolName = "it-bench-pool"
	removePool(poolName)
	b.Cleanup(func() { removePool(poolName) })
	bin := benchBinary(b)
	dir := b.TempDir()
	config := filepath.Join(dir, "boxes.yaml")
	size := func(n int) {
		writeBench(b, config, fmt.Sprintf("version: 1\nfleet: it\npools:\n  %s: {size: %d}\n", poolName, n))
	}
	size(8)
	run := func(args ...string) time.Duration {
		b.Helper()
		start := time.Now()
		if out, err := exec.Command(bin, append([]string{"-f", config}, args...)...).CombinedOutput(); err != nil {
			b.Fatalf("boxes %v: %v\n%s", args, err, out)
		}
		return time.Since(start)
	}
	run("lock", "image", image)
	run("apply", "--auto-approve")

	var claims []time.Duration
	for i := 0; i < 6; i++ {
		claims = append(claims, run("lease", poolName, "--holder", fmt.Sprintf("bench-%d", i)))
	}
	var leased, free []string
	out, err := exec.Command(bin, "-f", config, "leases", "--json").Output()
	if err != nil {
		b.Fatal(err)
	}
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
	if len(leased) < 3 || len(free) < 2 {
		b.Fatalf("leases after 10 claims: %s", out)
	}
	api, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		b.Fatal(err)
	}
	defer api.Close()
	ctx := context.Background()
	var creates []time.Duration
	for i := 0; i < 10; i++ {
		name := fmt.Sprintf("hbl-%s-bench-create", poolName)
		start := time.Now()
		made, err := api.ContainerCreate(ctx, &container.Config{Image: image, Entrypoint: []string{"true"}}, &container.HostConfig{NetworkMode: "none"}, nil, nil, name)
		if err != nil {
			b.Fatal(err)
		}
		creates = append(creates, time.Since(start))
		if err := api.ContainerRemove(ctx, made.ID, container.RemoveOptions{Force: true}); err != nil {
			b.Fatal(err)
		}
	}

	var releases, remakes []time.Duration
	for i, box := range leased[:3] {
		size(len(free) + 1 + i)
		releases = append(releases, run("release", box))
	}
	for range 3 {
		// The pool's first free box, made again by the apply under its name.
		took := run("rm", free[0], "--confirm", free[0])
		remakes = append(remakes, took+run("apply", "--auto-approve"))
	}
	b.Logf("claims %v; creates %v; releases %v; rm and apply %v", claims, creates, releases, remakes)
	benchtable.Report(b, benchtable.Row{Figure: "boxes lease from a warm pool (median of 6)", Value: ms(median(claims)), Unit: "ms",
		Baseline: "a container created by name through the API", Base: ms(median(creates))})
	benchtable.Report(b, benchtable.Row{Figure: "boxes lease from a warm pool (90th percentile of 6)", Value: ms(percentile(claims, 90)), Unit: "ms",
		Baseline: "a container created by name through the API (90th)", Base: ms(percentile(creates, 90))})
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
