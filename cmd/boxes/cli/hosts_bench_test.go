package cli_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/hermes-box/boxes/internal/benchtable"
	"github.com/hermes-box/boxes/internal/testhost"
)

// BenchmarkHosts: plan over 1, 2 and 3 hosts with 10 boxes to create on
// each (the local engine, one reached over ssh://, one over tcp:// with
// TLS; extra engines from internal/testhost), its time (the median of 3,
// connecting included, and with the engines connected) against one host's,
// and the API calls per host; and one box created on the ssh host against
// one created on the local engine. Skipped where extra engines cannot run
// (see internal/testhost).
func BenchmarkHosts(b *testing.B) {
	const n = 10
	image := benchImage(b)
	viaSSH := testhost.Start(b, testhost.Options{SSH: true, Images: []string{image}})
	viaTLS := testhost.Start(b, testhost.Options{TLS: true, Images: []string{image}})
	b.Setenv("PATH", viaSSH.SSHPath+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, e := range []*testhost.Engine{viaSSH, viaTLS} {
		warmEngine(b, e, image)
	}

	local, onSSH, onTLS := make([]string, n), make([]string, n), make([]string, n)
	settings := map[string]string{}
	for i := range n {
		local[i] = fmt.Sprintf("it-bench%d", i)
		onSSH[i] = fmt.Sprintf("it-bench-ssh%d", i)
		onTLS[i] = fmt.Sprintf("it-bench-tls%d", i)
		settings[onSSH[i]] = "{host: viassh}"
		settings[onTLS[i]] = "{host: viatls}"
	}
	hosts := fmt.Sprintf("  viassh: {docker: %q}\n  viatls: {docker: %q, tls: %q}\n", viaSSH.SSH, viaTLS.TCP, viaTLS.TLSDir)
	twoHosts := fmt.Sprintf("  viassh: {docker: %q}\n", viaSSH.SSH)
	cleanBench(b, append(append(append([]string{"it-bench-local", "it-bench-remote"}, local...), onSSH...), onTLS...)...)
	f := newBenchFleet(b, image)

	cases := []struct {
		hosts string
		boxes []string
	}{
		{"", local},
		{twoHosts, append(append([]string{}, local...), onSSH...)},
		{hosts, append(append(append([]string{}, local...), onSSH...), onTLS...)},
	}
	took := make([]time.Duration, len(cases))
	connected := make([]time.Duration, len(cases))
	calls := make([]int64, len(cases))
	for i, c := range cases {
		f.declare(c.hosts, c.boxes, settings)
		f.plan() // warm
		for range b.N {
			t, again, perHost := f.planMedian(3)
			took[i] += t
			connected[i] += again
			most := int64(0)
			for _, v := range perHost {
				most = max(most, v)
			}
			calls[i] += most
		}
	}

	var localCreate, remoteCreate time.Duration
	for range b.N {
		f.declare(hosts, []string{"it-bench-local"}, nil)
		t, _ := f.run("apply", "--auto-approve")
		localCreate += t
		f.declare(hosts, []string{"it-bench-local", "it-bench-remote"}, map[string]string{"it-bench-remote": "{host: viassh, executor: {bind: 0.0.0.0}}"})
		t, _ = f.run("apply", "--auto-approve")
		remoteCreate += t
		removeBench("it-bench-local")
		removeOn(viaSSH, "it-bench-remote")
	}

	N := float64(b.N)
	hostsName := func(i int) string {
		if i == 0 {
			return "1 host"
		}
		return fmt.Sprintf("%d hosts", i+1)
	}
	for i := range cases {
		r := benchtable.Row{Figure: fmt.Sprintf("plan, 1 host × %d boxes to create, connecting included", n), Value: took[i].Seconds() / N, Unit: "s"}
		if i > 0 {
			r.Figure, r.Baseline, r.Base = fmt.Sprintf("plan, %s × %d boxes (%s), connecting included", hostsName(i), n, []string{"", "local, ssh://", "local, ssh://, tcp:// with TLS"}[i]), "the same, 1 host", took[0].Seconds()/N
		}
		benchtable.Report(b, r)
	}
	for i := range cases {
		r := benchtable.Row{Figure: fmt.Sprintf("plan, 1 host × %d boxes, engine connected", n), Value: connected[i].Seconds() / N, Unit: "s"}
		if i > 0 {
			r.Figure, r.Baseline, r.Base = fmt.Sprintf("plan, %s × %d boxes, engines connected", hostsName(i), n), "the same, 1 host", connected[0].Seconds()/N
		}
		benchtable.Report(b, r)
	}
	for i := range cases {
		r := benchtable.Row{Figure: "plan, 1 host: API calls", Value: float64(calls[i]) / N, Unit: "calls"}
		if i > 0 {
			r.Figure, r.Baseline, r.Base = fmt.Sprintf("plan, %s: API calls per host (most)", hostsName(i)), "the same, 1 host", float64(calls[0])/N
		}
		benchtable.Report(b, r)
	}
	benchtable.Report(b, benchtable.Row{Figure: "boxes apply, 1 new box on an ssh:// host, to its MCP answer", Value: remoteCreate.Seconds() / N, Unit: "s",
		Baseline: "the same on the local engine", Base: localCreate.Seconds() / N})
}

// warmEngine creates, starts and removes one container of image on e, so
// that the first box there does not pay for the engine's first use of the
// image's layers (the local engine has long paid for it).
func warmEngine(b *testing.B, e *testhost.Engine, image string) {
	b.Helper()
	ctx := context.Background()
	api := e.Client()
	c, err := api.ContainerCreate(ctx, &container.Config{Image: image, Entrypoint: []string{"true"}}, nil, nil, nil, "")
	if err != nil {
		b.Fatalf("warming %s: %v", e.Name, err)
	}
	defer func() { _ = api.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}) }()
	if err := api.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		b.Fatalf("warming %s: %v", e.Name, err)
	}
	wait, errs := api.ContainerWait(ctx, c.ID, container.WaitConditionNotRunning)
	select {
	case <-wait:
	case err := <-errs:
		b.Fatalf("warming %s: %v", e.Name, err)
	}
}

// removeOn removes box's containers, volumes and network on e.
func removeOn(e *testhost.Engine, box string) {
	removeBoxesOn(context.Background(), e.Client(), box)
}
