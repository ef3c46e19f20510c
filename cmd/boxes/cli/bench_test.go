package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/go-connections/nat"

	recipes "github.com/hermes-box/boxes"
	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/imagebuild"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
)

// benchConfig writes a boxes.yaml declaring n it-bench boxes and a lock on the test image.
func benchConfig(b *testing.B, n int) (*Env, string) {
	b.Helper()
	dir := b.TempDir()
	var sb strings.Builder
	sb.WriteString("version: 1\nboxes:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, "  it-bench%d: {}\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "boxes.yaml"), []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	env := &Env{File: filepath.Join(dir, "boxes.yaml")}
	ref := os.Getenv("BOXES_TEST_IMAGE")
	if ref == "" {
		ref = "hermes-box-lite:test"
	}
	e, err := docker.Connect(context.Background(), spec.Host{}, docker.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	id, err := e.ImageID(context.Background(), ref)
	if err != nil {
		b.Fatalf("%v (run make test-image)", err)
	}
	if err := spec.WriteLock(env.LockFile(), &spec.Lock{Version: 1, Image: &spec.Image{ID: id, Ref: ref}}); err != nil {
		b.Fatal(err)
	}
	return env, id
}

// BenchmarkPlan measures observe + plan and counts the Docker API calls it makes.
func BenchmarkPlan(b *testing.B) {
	for _, n := range []int{1, 10, 50} {
		b.Run(fmt.Sprintf("boxes=%d", n), func(b *testing.B) {
			env, _ := benchConfig(b, n)
			ctx := context.Background()
			ws, err := openWorkspace(env, docker.Options{CountCalls: true})
			if err != nil {
				b.Fatal(err)
			}
			defer ws.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := ws.Plan(ctx, reconcile.PlanOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			e, err := engineOf(ctx, ws, "")
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(e.Calls())/float64(b.N), "calls/op")
		})
	}
}

// BenchmarkCreate10 creates 10 boxes with boxes apply, then the same
// containers, networks and volumes with raw engine API calls (the floor), and
// reports both and their ratio; then a no-op apply of the 10 boxes.
func BenchmarkCreate10(b *testing.B) {
	const n = 10
	if testing.Short() {
		b.Skip("real Docker engine")
	}
	removeBench := func() {
		for i := 0; i < n; i++ {
			removeBoxes(fmt.Sprintf("it-bench%d", i))
		}
	}
	removeBench()
	b.Cleanup(removeBench)
	env, image := benchConfig(b, n)
	ctx := context.Background()
	var applyTotal, rawTotal, noopTotal time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if err := runApply(ctx, &Env{Streams: Streams{In: strings.NewReader(""), Out: discard{}, Err: discard{}}, File: env.File}, applyFlags{autoApprove: true, parallelism: 4}, ""); err != nil {
			b.Fatal(err)
		}
		applyTotal += time.Since(start)

		start = time.Now()
		if err := runApply(ctx, &Env{Streams: Streams{In: strings.NewReader(""), Out: discard{}, Err: discard{}}, File: env.File}, applyFlags{autoApprove: true, parallelism: 4}, ""); err != nil {
			b.Fatal(err)
		}
		noopTotal += time.Since(start)
		removeBench()
		start = time.Now()
		rawCreate(b, ctx, image, n)
		rawTotal += time.Since(start)
		removeBench()
	}
	b.ReportMetric(applyTotal.Seconds()/float64(b.N), "apply-s/op")
	b.ReportMetric(rawTotal.Seconds()/float64(b.N), "raw-api-s/op")
	b.ReportMetric(applyTotal.Seconds()/rawTotal.Seconds(), "ratio-vs-raw")
	b.ReportMetric(noopTotal.Seconds()/float64(b.N), "noop-apply-s/op")
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// rawCreate makes what one box is, for n boxes, with plain engine calls, sequentially.
func rawCreate(b *testing.B, ctx context.Context, image string, n int) {
	e, err := docker.Connect(ctx, spec.Host{}, docker.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	api := e.Client()
	for i := 0; i < n; i++ {
		box := fmt.Sprintf("it-bench%d", i)
		labels := map[string]string{"hermes-box-lite": "1", "boxes.box": box}
		netName := "hbl-" + box + "_default"
		if _, err := api.NetworkCreate(ctx, netName, network.CreateOptions{Labels: labels}); err != nil {
			b.Fatal(err)
		}
		for _, svc := range []string{"agent", "executor"} {
			vol := "hbl-" + box + "_" + map[string]string{"agent": "agent-data", "executor": "exec-data"}[svc]
			if _, err := api.VolumeCreate(ctx, volume.CreateOptions{Name: vol, Labels: labels}); err != nil {
				b.Fatal(err)
			}
			init := true
			hc := &container.HostConfig{Init: &init, NetworkMode: container.NetworkMode(netName), Binds: []string{vol + ":/data"}}
			cfg := &container.Config{Image: image, Labels: labels, Entrypoint: []string{"/usr/local/bin/hb", svc}, Env: []string{"EXECUTOR_TOKEN=bench"}}
			if svc == "executor" {
				cfg.ExposedPorts = nat.PortSet{"4788/tcp": {}}
				hc.PortBindings = nat.PortMap{"4788/tcp": {{HostIP: "127.0.0.1"}}}
			}
			c, err := api.ContainerCreate(ctx, cfg, hc, nil, nil, "hbl-"+box+"-"+svc+"-1")
			if err != nil {
				b.Fatal(err)
			}
			if err := api.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkBuild measures boxes build from the offline recipe: with the lock
// current (nothing to do), after a guest edit (the assets layer only), and
// after a provision edit (the tools layer too: what provisioning every box at
// create would cost each time). ratio-assets-vs-tools is the point of the
// two layers.
func BenchmarkBuild(b *testing.B) {
	base := os.Getenv("BOXES_TEST_BASE")
	if base == "" {
		base = testBase
	}
	var skip, assets, tools time.Duration
	for i := 0; i < b.N; i++ {
		dir, recipe := benchRecipe(b)
		args := []string{"build", "--json", "--offline", "--base", base, "--recipe", recipe, "--tag", "hermes-box-lite:it-bench-build"}
		timed := func(what string) time.Duration {
			start := time.Now()
			var out, errb strings.Builder
			code := Main(Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, append([]string{"-f", filepath.Join(dir, "boxes.yaml")}, args...))
			took := time.Since(start)
			if code != 0 {
				b.Fatalf("%s: exit %d\n%s", what, code, errb.String())
			}
			var rep imagebuild.Result
			if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", rep.Image).Run() })
			return took
		}
		timed("first build")
		skip += timed("build with the lock current")
		benchAppend(b, filepath.Join(recipe, "guest", "profile.sh"))
		assets += timed("build after a guest edit")
		benchAppend(b, filepath.Join(recipe, "provision", "lib.sh"))
		tools += timed("build after a provision edit")
	}
	n := float64(b.N)
	b.ReportMetric(skip.Seconds()/n, "current-s/op")
	b.ReportMetric(assets.Seconds()/n, "assets-s/op")
	b.ReportMetric(tools.Seconds()/n, "tools-s/op")
	b.ReportMetric(assets.Seconds()/tools.Seconds(), "ratio-assets-vs-tools")
}

// benchRecipe is a boxes directory and a copy of the built-in recipe.
func benchRecipe(b *testing.B) (dir, recipe string) {
	b.Helper()
	dir, recipe = b.TempDir(), b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "boxes.yaml"), []byte("version: 1\nboxes: {}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.CopyFS(recipe, recipes.Recipe); err != nil {
		b.Fatal(err)
	}
	return dir, recipe
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
