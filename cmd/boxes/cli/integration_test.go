package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/mcp"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/statedir"
	"github.com/hermes-box/boxes/workspace"
)

// Test boxes are named it-*, so cleanup finds exactly them by their label.
// These four are shared by several tests (startWithItBoxes), which run one
// after the other; every other test names boxes of its own.
var itBoxes = []string{"it-alpha", "it-beta", "it-gamma", "it-delta"}

// shard is this test process's part of make test's run (BOXES_TEST_SHARD):
// the parts run at once against one engine, so each gives its fleets a
// name of its own, and no fleet's plan sees another part's boxes.
var shard = os.Getenv("BOXES_TEST_SHARD")

// fleetName is the fleet name a test writes as f, in this test process: the
// tests' fleets (it, it-…) get the shard's suffix.
func fleetName(f string) string {
	if shard == "" || (f != "it" && !strings.HasPrefix(f, "it-")) {
		return f
	}
	return f + "-s" + shard
}

// fleetLine is a boxes.yaml's fleet: line, for writeFile to rename.
var fleetLine = regexp.MustCompile(`(?m)^fleet: ([a-z0-9-]+)$`)

func testImage(t *testing.T, envVar, def string) string {
	t.Helper()
	ref := os.Getenv(envVar)
	if ref == "" {
		ref = def
	}
	if out, err := exec.Command("docker", "image", "inspect", "-f", "{{.Id}}", ref).CombinedOutput(); err != nil {
		t.Fatalf("test image %s missing (run make test-image): %s", ref, out)
	}
	return ref
}

func dockerOut(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func removeTestBoxes() {
	removeBoxes(itBoxes...)
	_ = exec.Command("docker", "volume", "rm", "-f", compose.VolumeName("it-delta", compose.AgentVolume)).Run()
}

// removeBoxes removes every container, network and volume labelled with one of names.
func removeBoxes(names ...string) {
	for _, b := range names {
		f := "label=" + compose.BoxLabel + "=" + b
		for _, kind := range []string{"container", "network", "volume"} {
			ls := []string{kind, "ls", "-q", "--filter", f}
			if kind == "container" {
				ls = append(ls, "-a")
			}
			ids, _ := exec.Command("docker", ls...).Output()
			for _, id := range strings.Fields(string(ids)) {
				args := []string{kind, "rm", id}
				if kind == "container" {
					args = []string{"rm", "-f", id}
				}
				_ = exec.Command("docker", args...).Run()
			}
		}
	}
}

type run struct {
	code           int
	stdout, stderr string
}

func boxes(t *testing.T, dir string, args ...string) run {
	t.Helper()
	return boxesWith(t, DefaultConnectors(), dir, args...)
}

// boxesWith is boxes with the hosts reached through c.
func boxesWith(t *testing.T, c Connectors, dir string, args ...string) run {
	t.Helper()
	var out, errb bytes.Buffer
	code := MainWith(context.Background(), Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, append([]string{"-f", filepath.Join(dir, "boxes.yaml")}, args...), c)
	return run{code, out.String(), errb.String()}
}

// writeFile writes a test file. A boxes.yaml without a fleet: key gets
// fleet: it, the tests' fleet, at its end, so that commands do not warn about it.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	// Appended, so that positions in messages stay where the test wrote them.
	if filepath.Base(path) == "boxes.yaml" && strings.HasPrefix(content, "version: 1\n") && strings.Contains(content, "\nboxes:") &&
		!strings.Contains(content, "\nfleet:") && strings.HasSuffix(content, "\n") {
		content += "fleet: it\n"
	}
	if filepath.Base(path) == "boxes.yaml" {
		content = fleetLine.ReplaceAllStringFunc(content, func(l string) string { return "fleet: " + fleetName(strings.TrimPrefix(l, "fleet: ")) })
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// startIntegration skips under -short and finds both test images.
func startIntegration(t *testing.T) (image, image2 string) {
	t.Helper()
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image = testImage(t, "BOXES_TEST_IMAGE", "hermes-box-lite:test")
	image2 = testImage(t, "BOXES_TEST_IMAGE2", "hermes-box-lite:test2")
	return image, image2
}

// startWithItBoxes is startIntegration for a test of the shared itBoxes:
// they are removed before and after it, also when it fails.
func startWithItBoxes(t *testing.T) (image, image2 string) {
	t.Helper()
	image, image2 = startIntegration(t)
	removeTestBoxes()
	t.Cleanup(removeTestBoxes)
	return image, image2
}

// TestIntegrationPlanApply: three boxes through plan and apply: made, one
// changed, all put on a new image, one deleted with --confirm-delete, one
// stopped and started, one removed with rm; on the way, a stale plan file,
// a lost token and a volume boxes did not make.
// Real engine: compose's containers carry the labels, the executor is
// published on 127.0.0.1 alone and answers only with its token, one box
// cannot resolve another's, IPv6 is off inside, /data survives the
// recreates and a lost token is read back from the container.
func TestIntegrationPlanApply(t *testing.T) {
	image, image2 := startWithItBoxes(t)

	e, err := docker.Connect(context.Background(), spec.Host{}, docker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("engine API version %s", e.APIVersion())
	e.Close()

	dir := t.TempDir()
	yaml := `version: 1
boxes:
  it-alpha: {}
  it-beta: {state: stopped}
  it-gamma: {env: {TZ: UTC}}
`
	writeFile(t, filepath.Join(dir, "boxes.yaml"), yaml)
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	lock, err := spec.LoadLock(filepath.Join(dir, "boxes.lock"))
	if err != nil {
		t.Fatal(err)
	}
	if want := dockerOut(t, "image", "inspect", "-f", "{{.Id}}", image); lock.Image.ID != want {
		t.Fatalf("lock image ID %s, docker says %s", lock.Image.ID, want)
	}

	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("first apply: %+v", r)
	}
	if r := boxes(t, dir, "plan", "--detailed-exitcode"); r.code != 0 || !strings.Contains(r.stdout, "No changes.") {
		t.Fatalf("plan after create: %+v", r)
	}

	t.Run("box on docker", func(t *testing.T) {
		for _, kind := range []string{"container", "volume", "network"} {
			args := []string{kind, "ls", "-q", "--filter", "label=" + compose.BoxLabel + "=it-alpha"}
			if kind == "container" {
				args = append(args, "-a")
			}
			all := strings.Fields(dockerOut(t, args...))
			managed := strings.Fields(dockerOut(t, append(args, "--filter", "label="+compose.ManagedLabel+"=1")...))
			if len(all) == 0 || len(all) != len(managed) {
				t.Errorf("%ss of it-alpha: %d, of which labelled %s=1: %d", kind, len(all), compose.ManagedLabel, len(managed))
			}
		}
		if ps := dockerOut(t, "ps", "--filter", "label=com.docker.compose.project=hbl-it-alpha", "--format", "{{.Names}}"); !strings.Contains(ps, "hbl-it-alpha-agent-1") || !strings.Contains(ps, "hbl-it-alpha-executor-1") {
			t.Errorf("compose project label does not find both containers: %q", ps)
		}
		if ports := dockerOut(t, "port", "hbl-it-alpha-agent-1"); ports != "" {
			t.Errorf("agent publishes %q", ports)
		}
		ports := dockerOut(t, "port", "hbl-it-alpha-executor-1", "4788/tcp")
		if !strings.HasPrefix(ports, "127.0.0.1:") || strings.Contains(ports, "\n") {
			t.Fatalf("executor published on %q, want 127.0.0.1 only", ports)
		}
		token, ok, err := statedir.Beside(filepath.Join(dir, "boxes.yaml")).Tokens().Get("it-alpha")
		if err != nil || !ok {
			t.Fatalf("token: %v %v", ok, err)
		}
		url := "http://" + ports + "/mcp"
		if err := mcp.Initialize(context.Background(), url, token); err != nil {
			t.Errorf("initialize with the token: %v", err)
		}
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("initialize without the token: %v %v, want 401", resp, err)
		}
		inside := func(cmd string) (string, error) {
			out, err := exec.Command("docker", "exec", "hbl-it-alpha-agent-1", "sh", "-c", cmd).CombinedOutput()
			return strings.TrimSpace(string(out)), err
		}
		code, err := inside(`curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' -H "Authorization: Bearer $EXECUTOR_TOKEN" -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}' http://executor:4788/mcp`)
		if err != nil || code != "200" {
			t.Errorf("from the agent with the token: %q %v", code, err)
		}
		code, _ = inside(`curl -s -o /dev/null -w '%{http_code}' -X POST -d '{}' http://executor:4788/mcp`)
		if code != "401" {
			t.Errorf("from the agent without the token: %q", code)
		}
		if out, err := inside("getent hosts hbl-it-gamma-executor-1 || getent hosts it-gamma-executor"); err == nil {
			t.Errorf("alpha's agent resolves gamma's executor: %q", out)
		}
		if out, _ := inside("cat /proc/sys/net/ipv6/conf/all/disable_ipv6"); out != "1" {
			t.Errorf("disable_ipv6 = %q", out)
		}
		if st := dockerOut(t, "inspect", "-f", "{{.State.Status}}", "hbl-it-beta-agent-1"); st == "running" {
			t.Errorf("stopped box beta is running")
		}
		// Stopped as declared is healthy; the checks inside are skipped.
		if r := boxes(t, dir, "doctor", "it-beta"); r.code != 0 || !strings.Contains(r.stdout, "stopped, as boxes.yaml declares") || !strings.Contains(r.stdout, "not run: the box is stopped") {
			t.Errorf("doctor of a box stopped as declared: %+v", r)
		}
	})

	dockerOut(t, "exec", "hbl-it-gamma-agent-1", "sh", "-c", "echo kept > /data/marker")
	alphaID := dockerOut(t, "inspect", "-f", "{{.Id}}", "hbl-it-alpha-agent-1")

	t.Run("env change recreates only that box, data kept", func(t *testing.T) {
		writeFile(t, filepath.Join(dir, "boxes.yaml"), strings.Replace(yaml, "TZ: UTC", "TZ: Europe/Berlin", 1))
		r := boxes(t, dir, "plan", "--json")
		var jp reconcile.JSONPlan
		if err := json.Unmarshal([]byte(r.stdout), &jp); err != nil {
			t.Fatalf("plan --json: %v\n%+v", err, r)
		}
		for _, b := range jp.Boxes {
			want := reconcile.NoOp
			if b.Name == "it-gamma" {
				want = reconcile.Recreate
				if !strings.Contains(strings.Join(b.Reasons, ";"), "env.TZ: UTC → Europe/Berlin") {
					t.Errorf("gamma reasons %v", b.Reasons)
				}
			}
			if b.Action != want {
				t.Errorf("%s: %s, want %s", b.Name, b.Action, want)
			}
		}
		if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
			t.Fatalf("apply: %+v", r)
		}
		if got := dockerOut(t, "exec", "hbl-it-gamma-agent-1", "cat", "/data/marker"); got != "kept" {
			t.Errorf("marker after recreate: %q", got)
		}
		if got := dockerOut(t, "inspect", "-f", "{{.Id}}", "hbl-it-alpha-agent-1"); got != alphaID {
			t.Errorf("alpha was recreated too")
		}
	})

	t.Run("stale plan file is refused", func(t *testing.T) {
		planFile := filepath.Join(dir, "stale.plan")
		if r := boxes(t, dir, "plan", "-out", planFile); r.code != 0 {
			t.Fatalf("plan -out: %+v", r)
		}
		if data, _ := os.ReadFile(planFile); bytes.Contains(data, []byte(mustToken(t, dir, "it-alpha"))) {
			t.Errorf("plan file contains a token")
		}
		if r := boxes(t, dir, "lock", "image", image2); r.code != 0 {
			t.Fatalf("lock image2: %+v", r)
		}
		r := boxes(t, dir, "apply", planFile)
		if r.code != 1 || !strings.Contains(r.stderr, "plan is stale") {
			t.Errorf("stale apply: %+v", r)
		}
	})

	t.Run("new image recreates every box, data kept", func(t *testing.T) {
		r := boxes(t, dir, "plan", "--json")
		var jp reconcile.JSONPlan
		_ = json.Unmarshal([]byte(r.stdout), &jp)
		if jp.Summary.Recreate != 3 {
			t.Fatalf("plan: %s", r.stdout)
		}
		for _, b := range jp.Boxes {
			if len(b.Causes) == 0 || b.Causes[0].Kind != "image" {
				t.Errorf("%s causes %+v", b.Name, b.Causes)
			}
		}
		if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
			t.Fatalf("apply: %+v", r)
		}
		if got := dockerOut(t, "exec", "hbl-it-gamma-agent-1", "cat", "/data/marker"); got != "kept" {
			t.Errorf("marker after image change: %q", got)
		}
		if r := boxes(t, dir, "plan", "--detailed-exitcode"); r.code != 0 {
			t.Errorf("plan after image change: %+v", r)
		}
	})

	t.Run("delete needs confirmation", func(t *testing.T) {
		writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nboxes:\n  it-alpha: {}\n  it-beta: {state: stopped}\n")
		before := dockerOut(t, "ps", "-aq", "--filter", "label="+compose.BoxLabel+"=it-gamma")
		r := boxes(t, dir, "apply", "--auto-approve")
		if r.code != 1 || !strings.Contains(r.stderr, "--confirm-delete it-gamma") {
			t.Errorf("apply without confirm: %+v", r)
		}
		if after := dockerOut(t, "ps", "-aq", "--filter", "label="+compose.BoxLabel+"=it-gamma"); after != before || after == "" {
			t.Fatalf("refused apply changed containers: %q → %q", before, after)
		}
		if r := boxes(t, dir, "apply", "--auto-approve", "--confirm-delete", "it-gamma"); r.code != 0 {
			t.Fatalf("apply with confirm: %+v", r)
		}
		for _, kind := range []string{"ps -aq", "volume ls -q", "network ls -q"} {
			args := append(strings.Fields(kind), "--filter", "label="+compose.BoxLabel+"=it-gamma")
			if left := dockerOut(t, args...); left != "" {
				t.Errorf("after delete, %s left %q", kind, left)
			}
		}
	})

	t.Run("a lost token is recovered from the box", func(t *testing.T) {
		want := mustToken(t, dir, "it-alpha")
		if err := os.Remove(filepath.Join(dir, ".boxes", "secrets", "it-alpha.env")); err != nil {
			t.Fatal(err)
		}
		r := boxes(t, dir, "plan", "--detailed-exitcode")
		if r.code != 0 || !strings.Contains(r.stderr, "recovered it") || strings.Contains(r.stdout+r.stderr, want) {
			t.Errorf("plan with the token file gone: %+v", r)
		}
		if got := mustToken(t, dir, "it-alpha"); got != want {
			t.Errorf("recovered token differs")
		}
	})

	t.Run("ls, stop, start, rm", func(t *testing.T) {
		r := boxes(t, dir, "ls", "--json")
		var rows []workspace.Row
		if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 2 {
			t.Fatalf("ls --json: %v %+v", err, r)
		}
		if rows[0].Name != "it-alpha" || rows[0].State != "running" || rows[0].Image != "current" || !strings.HasPrefix(rows[0].URL, "http://127.0.0.1:") || strings.Contains(r.stdout, mustToken(t, dir, "it-alpha")) {
			t.Errorf("ls row %+v", rows[0])
		}
		r = boxes(t, dir, "stop", "it-alpha", "--json")
		if r.code != 0 {
			t.Fatalf("stop: %+v", r)
		}
		if res := decodeResult(t, r); res.Box != "it-alpha" || res.State != "stopped" || res.Host != "" {
			t.Errorf("stop --json: %+v", res)
		}
		if r := boxes(t, dir, "plan", "--json"); !strings.Contains(r.stdout, `"action": "start"`) {
			t.Errorf("plan after an imperative stop does not report the drift: %s", r.stdout)
		}
		r = boxes(t, dir, "start", "it-alpha", "--json")
		if r.code != 0 {
			t.Fatalf("start: %+v", r)
		}
		if res := decodeResult(t, r); res.Box != "it-alpha" || res.State != "running" {
			t.Errorf("start --json: %+v", res)
		}
		if r := boxes(t, dir, "plan", "--detailed-exitcode"); r.code != 0 {
			t.Errorf("plan after start: %+v", r)
		}
		r = boxes(t, dir, "rm", "it-beta")
		if r.code != 1 || !strings.Contains(r.stderr, "--confirm it-beta") || !strings.Contains(r.stdout, "no backup found") {
			t.Errorf("rm without confirm: %+v", r)
		}
		if got := dockerOut(t, "ps", "-aq", "--filter", "label="+compose.BoxLabel+"=it-beta"); got == "" {
			t.Fatal("rm without confirm removed it-beta")
		}
		r = boxes(t, dir, "rm", "it-beta", "--confirm", "it-beta", "--json")
		if r.code != 0 {
			t.Fatalf("rm: %+v", r)
		}
		if res := decodeResult(t, r); res.Box != "it-beta" || res.State != "removed" || res.Containers == nil || *res.Containers != 3 ||
			res.Volumes == nil || *res.Volumes == 0 || res.Backup == nil || *res.Backup != "" || res.Declared == nil {
			t.Errorf("rm --json: %+v", res)
		}
		if got := dockerOut(t, "volume", "ls", "-q", "--filter", "label="+compose.BoxLabel+"=it-beta"); got != "" {
			t.Errorf("rm left volumes %q", got)
		}
		if r := boxes(t, dir, "plan", "--json"); !strings.Contains(r.stdout, `"action": "create"`) {
			t.Errorf("plan after rm of a declared box does not report the drift: %s", r.stdout)
		}
	})

	t.Run("unlabelled volume blocks the plan", func(t *testing.T) {
		name := compose.VolumeName("it-delta", compose.AgentVolume)
		dockerOut(t, "volume", "create", name)
		writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nboxes:\n  it-alpha: {}\n  it-beta: {state: stopped}\n  it-delta: {}\n")
		r := boxes(t, dir, "plan")
		if r.code != 1 || !strings.Contains(r.stderr, name) {
			t.Errorf("plan with a conflicting volume: %+v", r)
		}
		if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 1 {
			t.Errorf("apply with a conflicting volume: %+v", r)
		}
		if labels := dockerOut(t, "volume", "inspect", "-f", "{{json .Labels}}", name); strings.Contains(labels, compose.ManagedLabel) {
			t.Errorf("the unlabelled volume was touched: %s", labels)
		}
		if c := dockerOut(t, "ps", "-aq", "--filter", "label="+compose.BoxLabel+"=it-delta"); c != "" {
			t.Errorf("containers made for it-delta despite the conflict")
		}
	})
}

func mustToken(t *testing.T, dir, box string) string {
	t.Helper()
	token, ok, err := statedir.Beside(filepath.Join(dir, "boxes.yaml")).Tokens().Get(box)
	if err != nil || !ok {
		t.Fatalf("token of %s: %v %v", box, ok, err)
	}
	return token
}

// An executor that cannot run fails apply at once, with its own words, not
// after the readiness timeout: the recipe image without the stand-in has no
// executor command. Real engine: the executor really exits in its
// container, and its last log lines are the engine's.
func TestIntegrationApplyReportsADeadExecutor(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image := testImage(t, "BOXES_TEST_RECIPE_IMAGE", "hermes-box-lite:test-recipe")
	removeBoxes("it-dead")
	t.Cleanup(func() { removeBoxes("it-dead") })
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), "version: 1\nboxes:\n  it-dead: {}\n")
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	r := boxes(t, dir, "apply", "--auto-approve", "--target", "it-dead")
	if r.code != 1 || !strings.Contains(r.stderr, "executor of it-dead: the container is ") ||
		!strings.Contains(r.stderr, "its last log lines: hb: error: this image has no executor command") {
		t.Errorf("apply with a dead executor: %+v", r)
	}
}
