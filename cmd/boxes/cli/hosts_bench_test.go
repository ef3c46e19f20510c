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
// connecting included, and with the engines connected) against the
// slowest of its hosts planned alone, and the API calls per host; and one
// box created on the ssh host against one created on the local engine.
// Skipped where extra engines cannot run
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
	sshHost := fmt.Sprintf("  viassh: {docker: %q}\n", viaSSH.SSH)
	tlsHost := fmt.Sprintf("  viatls: {docker: %q, tls: %q}\n", viaTLS.TCP, viaTLS.TLSDir)
	cleanBench(b, append(append(append([]string{"it-bench-local", "it-bench-remote"}, local...), onSSH...), onTLS...)...)
	f := newBenchFleet(b, image)

	// Each remote host alone (the local engine, empty, is observed too, as
	// always) is the fair baseline of a plan over several: connecting over
	// ssh costs more than a whole plan of the local engine, and observing
	// in parallel means a plan over several hosts takes about as long as
	// its slowest host alone.
	cases := []struct {
		name, hosts string
		boxes       []string
	}{
		{"local", "", local},
		{"ssh:// alone", sshHost, onSSH},
		{"tcp:// with TLS alone", tlsHost, onTLS},
		{"2 hosts (local, ssh://)", sshHost, append(append([]string{}, local...), onSSH...)},
		{"3 hosts (local, ssh://, tcp:// with TLS)", hosts, append(append(append([]string{}, local...), onSSH...), onTLS...)},
	}
	const (
		localAlone, sshAlone, tlsAlone, two, three = 0, 1, 2, 3, 4
	)
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
	// slowest is the slowest of the single hosts in of, for the figures in ds.
	slowest := func(ds []time.Duration, of ...int) (string, float64) {
		worst := of[0]
		for _, i := range of[1:] {
			if ds[i] > ds[worst] {
				worst = i
			}
		}
		return "the slowest of its hosts alone (" + cases[worst].name + ")", ds[worst].Seconds() / N
	}
	for _, t := range []struct {
		ds   []time.Duration
		what string
	}{{took, "connecting included"}, {connected, "engines connected"}} {
		for i, c := range cases {
			r := benchtable.Row{Figure: fmt.Sprintf("plan, %s × %d boxes, %s", c.name, n, t.what), Value: t.ds[i].Seconds() / N, Unit: "s"}
			switch i {
			case sshAlone, tlsAlone:
				r.Baseline, r.Base = "the same, local", t.ds[localAlone].Seconds()/N
			case two:
				r.Baseline, r.Base = slowest(t.ds, localAlone, sshAlone)
			case three:
				r.Baseline, r.Base = slowest(t.ds, localAlone, sshAlone, tlsAlone)
			}
			benchtable.Report(b, r)
		}
	}
	for i, c := range cases {
		if i == sshAlone || i == tlsAlone {
			continue
		}
		r := benchtable.Row{Figure: "plan, 1 host: API calls", Value: float64(calls[i]) / N, Unit: "calls"}
		if i > 0 {
			r.Figure, r.Baseline, r.Base = fmt.Sprintf("plan, %s: API calls per host (most)", c.name), "the same, 1 host", float64(calls[0])/N
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
