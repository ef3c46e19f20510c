package kube

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/snapshot"
)

// TestIntegrationKubeSnapshot: on the cluster, a running box's /data is
// snapshotted by a helper pod on its claim (the box quiesced meanwhile and
// resumed), observed as a snapshot with its size; the box is reverted to
// it once stopped, and a second box is forked from it; a snapshot cut
// short is refused by revert; a helper left writing by a killed boxes is
// removed by the next; helpers have no network; VolumeSizes reads a
// running box's volumes; ToolVersions reads the image's tools. Real
// cluster: the scheduler, the claims' binding and the kubelet decide it.
func TestIntegrationKubeSnapshot(t *testing.T) {
	kubeconfig, ctxName := testCluster(t)
	t.Parallel() // a namespace of its own
	const ns = "it-kube-snap"
	namespace(t, kubeconfig, ns)
	e, _ := countingEngine(t, kubeconfig, ctxName, ns)
	ctx := context.Background()
	image := testBoxImage(t)
	config := filepath.Join(t.TempDir(), "boxes.yaml")

	up := func(name string, create bool) engine.Container {
		t.Helper()
		p := boxProject(t, name, image, "tok-"+name)
		if create {
			if err := e.Create(ctx, p, false); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Start(ctx, p); err != nil {
			t.Fatal(err)
		}
		if err := e.WaitInit(ctx, name); err != nil {
			t.Fatal(err)
		}
		o, err := e.Observe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		agent, ok := o.Of(name).Container(compose.AgentService)
		if !ok || agent.State != engine.Running {
			t.Fatalf("%s's agent: %+v", name, agent)
		}
		return agent
	}
	run := func(id, cmd string) string {
		t.Helper()
		var out bytes.Buffer
		code, err := e.Exec(ctx, id, engine.ExecOptions{Cmd: []string{"sh", "-c", cmd}, Stdout: &out, Stderr: &out})
		if err != nil || code != 0 {
			t.Fatalf("%s: exit %d, %v: %s", cmd, code, err, out.String())
		}
		return strings.TrimSpace(out.String())
	}
	observe := func() *engine.Observed {
		t.Helper()
		o, err := e.Observe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}

	agent := up("ks", true)
	run(agent.ID, "echo before > /data/marker && head -c 300000 /dev/urandom > /data/blob")

	sizes := e.VolumeSizes(ctx, observe(), []string{compose.VolumeName("ks", compose.AgentVolume), compose.VolumeName("ks", compose.ExecutorVolume)})
	if s := sizes[compose.VolumeName("ks", compose.AgentVolume)]; s.Unread != "" || s.Bytes < 300000 {
		t.Errorf("the size of ks's /data: %+v, want at least the 300000 bytes written", s)
	}

	began := time.Now()
	s, err := snapshot.Take{Box: "ks", Label: "before", Fleet: "it-kube", Agent: agent, Image: image, Config: config, Host: "k8s",
		Init: hb.Wait{Timeout: time.Minute}}.Run(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("snapshot of a running box: %s", time.Since(began).Round(time.Millisecond))
	o := observe()
	snaps := o.SnapshotsOf("ks")
	if len(snaps) != 1 || snaps[0].Label != "before" || snaps[0].Volume != s.Volume || snaps[0].Size < 300000 || snaps[0].Writing || snaps[0].Created.IsZero() {
		t.Fatalf("snapshots observed: %+v; want before, its size and time, not being written", snaps)
	}
	for _, v := range o.Of("ks").Volumes {
		if v.Name == s.Volume {
			t.Errorf("the snapshot is observed as a volume of the box too")
		}
	}
	if got := run(agent.ID, "test -e /data/.hb/quiesced && echo quiesced || echo resumed"); got != "resumed" {
		t.Errorf("the box after its snapshot: %s", got)
	}

	// Reverted once stopped: /data as it was.
	run(agent.ID, "echo after > /data/marker && touch /data/new")
	if err := e.Stop(ctx, compose.ProjectName("ks")); err != nil {
		t.Fatal(err)
	}
	if err := (snapshot.Revert{Box: "ks", Snapshot: s, Image: image}).Run(ctx, e); err != nil {
		t.Fatal(err)
	}
	agent = up("ks", false)
	if got := run(agent.ID, "cat /data/marker; test -e /data/new && echo new; wc -c < /data/blob"); got != "before\n300000" {
		t.Errorf("/data after the revert: %q; want the marker of before, no new file, the blob", got)
	}

	// Forked: a new box made from the snapshot, started on it.
	if err := e.Create(ctx, boxProject(t, "ks2", image, "tok-ks2"), false); err != nil {
		t.Fatal(err)
	}
	if err := (snapshot.Fork{Box: "ks2", Source: s.Volume, Snapshot: true, Image: image}).Run(ctx, e); err != nil {
		t.Fatal(err)
	}
	fork := up("ks2", false)
	if got := run(fork.ID, "cat /data/marker; wc -c < /data/blob"); got != "before\n300000" {
		t.Errorf("/data of the fork: %q", got)
	}

	// A snapshot cut short (its claim made, no data/ in it) is refused.
	cut := compose.SnapshotVolumeName("ks", "cut")
	labels := snapshot.Labels(engine.Snapshot{Volume: cut, Box: "ks", Label: "cut", Fleet: "it-kube", Created: time.Now(), Size: -1})
	if _, err := e.RunHelper(ctx, engine.Helper{Box: "ks", Image: image, Mounts: []engine.HelperMount{{Volume: cut, Target: "/to", Labels: labels}}, Cmd: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.RunHelper(ctx, engine.Helper{Box: "ks", Image: image, Mounts: []engine.HelperMount{{Volume: cut, Target: "/to", Labels: labels}}, Cmd: []string{"true"}}); !errors.Is(err, engine.ErrVolumeExists) {
		t.Errorf("a helper making a claim there already: %v, want ErrVolumeExists", err)
	}
	if err := e.Stop(ctx, compose.ProjectName("ks2")); err != nil {
		t.Fatal(err)
	}
	if err := (snapshot.Revert{Box: "ks2", Snapshot: engine.Snapshot{Volume: cut, Box: "ks", Label: "cut"}, Image: image}).Run(ctx, e); !errors.Is(err, snapshot.ErrIncomplete) {
		t.Errorf("a revert to a snapshot cut short: %v, want ErrIncomplete", err)
	}
	if _, err := e.RunHelper(ctx, engine.Helper{Box: "ks", Image: image, Mounts: []engine.HelperMount{{Volume: "hbl-nothing_agent-data", Target: "/from", ReadOnly: true}}, Cmd: []string{"true"}}); !errors.Is(err, engine.ErrNoVolume) {
		t.Errorf("a helper reading a claim the namespace lacks: %v, want ErrNoVolume", err)
	}

	// A helper left writing the snapshot by a killed boxes: observed as
	// writing, and removed by the next helper that writes that claim.
	left := e.helperPod(engine.Helper{Box: "ks", Image: image, Snapshot: "cut", Mounts: []engine.HelperMount{{Volume: cut, Target: "/to"}}, Cmd: []string{"sleep", "600"}}, "")
	if _, err := e.core.CoreV1().Pods(ns).Create(ctx, left, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, sn := range observe().SnapshotsOf("ks") {
		if sn.Label == "cut" && !sn.Writing {
			t.Errorf("snapshot cut with a helper left writing it is not observed as being written")
		}
	}
	if _, err := e.RunHelper(ctx, engine.Helper{Box: "ks", Image: image, Mounts: []engine.HelperMount{{Volume: cut, Target: "/to"}}, Cmd: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	pods, err := e.core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: compose.OneOffLabel + "=1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Errorf("helper pods left after the next helper: %d (%s…)", len(pods.Items), pods.Items[0].Name)
	}

	// A snapshot removed with a helper left reading it: both go.
	left = e.helperPod(engine.Helper{Box: "ks", Image: image, Mounts: []engine.HelperMount{{Volume: cut, Target: "/from", ReadOnly: true}}, Cmd: []string{"sleep", "600"}}, "")
	if _, err := e.core.CoreV1().Pods(ns).Create(ctx, left, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.RemoveVolume(ctx, cut); err != nil {
		t.Fatal(err)
	}
	for _, sn := range observe().SnapshotsOf("ks") {
		if sn.Label == "cut" {
			t.Errorf("snapshot cut is still observed once removed: %+v", sn)
		}
	}

	// A helper has no network (once the enforcer has seen its pod).
	out, err := e.RunHelper(ctx, engine.Helper{Box: "ks", Image: image,
		Cmd: []string{"sh", "-c", `sleep 2; curl --noproxy '*' -s -k -o /dev/null -m 3 -w '%{http_code}' https://` + kubeNode(t, e) + `:6443/ || true`}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Trim(string(out), "0") != "" {
		t.Errorf("a helper reached the API server: HTTP codes %q", out)
	}

	tools, err := e.ToolVersions(ctx, image)
	if err != nil || len(tools) == 0 {
		t.Errorf("the image's tools: %v, %v", tools, err)
	}
	t.Logf("tools: %v", tools)
}

// kubeNode is the address of the node the cluster's pods run on.
func kubeNode(t *testing.T, e *Engine) string {
	t.Helper()
	nodes, err := e.core.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("nodes: %v", err)
	}
	for _, a := range nodes.Items[0].Status.Addresses {
		if a.Type == "InternalIP" {
			return a.Address
		}
	}
	t.Fatal("the node has no internal address")
	return ""
}
