package kube

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/internal/benchtable"
	"github.com/hermes-box/boxes/internal/testkube"
	"github.com/hermes-box/boxes/spec"
)

// BenchmarkKube, on the test cluster: a new box ready (its Sandboxes
// running, hb init done, the gate answering, the executor answering an
// authenticated MCP initialize) against the same box on the local Docker
// engine; and the API calls of an observation of a namespace holding 1,
// 10 and 50 boxes.
func BenchmarkKube(b *testing.B) {
	kubeconfig := testkube.Config(b)
	ctx := context.Background()
	image := testBoxImage(b)
	var kube, dock, floor time.Duration
	calls := map[int]int64{}
	sizes := []int{1, 10, 50}
	for i := range b.N {
		ns := fmt.Sprintf("it-kube-bench-%d", i)
		namespace(b, kubeconfig, ns)
		e, n := countingEngine(b, kubeconfig, currentContext(b, kubeconfig), ns)

		name := fmt.Sprintf("kbench%d", i)
		p := boxProject(b, name, image, "tok-bench")
		start := time.Now()
		if err := e.Create(ctx, p, false); err != nil {
			b.Fatal(err)
		}
		if err := e.Start(ctx, p); err != nil {
			b.Fatal(err)
		}
		if err := e.WaitInit(ctx, name); err != nil {
			b.Fatal(err)
		}
		if _, err := e.WaitReady(ctx, name, "tok-bench"); err != nil {
			b.Fatal(err)
		}
		kube += time.Since(start)

		d, err := docker.Connect(ctx, spec.Host{}, docker.Options{})
		if err != nil {
			b.Fatal(err)
		}
		dp := boxProject(b, "it-"+name, image, "tok-bench")
		b.Cleanup(func() { removeDockerBox(dp.Name) })
		start = time.Now()
		if err := d.Create(ctx, dp, false); err != nil {
			b.Fatal(err)
		}
		if err := d.Start(ctx, dp); err != nil {
			b.Fatal(err)
		}
		if err := d.WaitInit(ctx, "it-"+name); err != nil {
			b.Fatal(err)
		}
		if _, err := d.WaitReady(ctx, "it-"+name, "tok-bench"); err != nil {
			b.Fatal(err)
		}
		dock += time.Since(start)
		removeDockerBox(dp.Name)
		d.Close()

		// The cluster's floor: one bare pod of the same image, ready
		// when a probe that does nothing passes.
		floor += podFloor(b, e, image)

		made := 1
		for _, size := range sizes {
			for ; made < size; made++ {
				if err := e.Create(ctx, boxProject(b, fmt.Sprintf("kb%d-%d", i, made), image, "tok"), false); err != nil {
					b.Fatal(err)
				}
			}
			before := n.Load()
			if _, err := e.Observe(ctx, image); err != nil {
				b.Fatal(err)
			}
			calls[size] += n.Load() - before
		}
	}
	N := float64(b.N)
	benchtable.Report(b, benchtable.Row{Figure: "a new box ready on the one-node cluster (Sandboxes, hb init, gate, executor's MCP initialize)", Value: kube.Seconds() / N, Unit: "s",
		Baseline: "the same box on the local Docker engine", Base: dock.Seconds() / N})
	benchtable.Report(b, benchtable.Row{Figure: "a new box ready on the one-node cluster", Value: kube.Seconds() / N, Unit: "s",
		Baseline: "the aim: 2× the same box on Docker", Base: 2 * dock.Seconds() / N})
	benchtable.Report(b, benchtable.Row{Figure: "a bare pod of the box's image ready on the one-node cluster (the cluster's floor)", Value: floor.Seconds() / N, Unit: "s",
		Baseline: "the same box on the local Docker engine", Base: dock.Seconds() / N})
	for _, size := range sizes {
		boxes := "boxes"
		if size == 1 {
			boxes = "box"
		}
		r := benchtable.Row{Figure: fmt.Sprintf("observe a Kubernetes namespace of %d %s: API calls", size, boxes), Value: float64(calls[size]) / N, Unit: "calls"}
		if size != sizes[0] {
			r.Baseline, r.Base = fmt.Sprintf("the same with %d box", sizes[0]), float64(calls[sizes[0]])/N
		}
		benchtable.Report(b, r)
	}
}

// removeDockerBox removes every container, network and volume of a
// project the benchmark made on the local engine, by its compose label.
func removeDockerBox(project string) {
	f := "label=com.docker.compose.project=" + project
	for _, kind := range []string{"container", "network", "volume"} {
		ls := []string{kind, "ls", "-q", "--filter", f}
		if kind == "container" {
			ls = append(ls, "-a")
		}
		out, _ := exec.Command("docker", ls...).Output()
		for _, id := range strings.Fields(string(out)) {
			args := []string{kind, "rm", id}
			if kind == "container" {
				args = []string{"rm", "-f", id}
			}
			_ = exec.Command("docker", args...).Run()
		}
	}
}

// podFloor is how long one pod of image takes to be ready on the cluster,
// its readiness probe a command that does nothing: what the cluster itself
// takes to start a container, under any box.
func podFloor(b *testing.B, e *Engine, image string) time.Duration {
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "floor", Namespace: e.namespace},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "floor", Image: image, ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "600"},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 1},
			}},
			AutomountServiceAccountToken: new(bool),
		},
	}
	start := time.Now()
	if _, err := e.core.CoreV1().Pods(e.namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	for {
		p, err := e.core.CoreV1().Pods(e.namespace).Get(ctx, "floor", metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if podReady(p) {
			break
		}
		if time.Since(start) > WaitTimeout {
			b.Fatal("the floor pod is not ready")
		}
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Since(start)
	grace := int64(0)
	_ = e.core.CoreV1().Pods(e.namespace).Delete(ctx, "floor", metav1.DeleteOptions{GracePeriodSeconds: &grace})
	return took
}
