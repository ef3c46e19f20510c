package cli

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/internal/testhost"
)

// TestIntegrationExecutorDoor proves the executor's door on the real
// engine, against the made-up internet of TestIntegrationNetworkDoor. One
// box whose agent may reach nothing (egress: none) and whose executor may
// reach allowed.test: from inside the executor, allowed.test passes through
// the gate, other.test is refused by it, and a direct connection has no
// route; the agent is refused allowed.test, cannot reach the executor's
// proxy by its name or its address, and still reaches the executor's MCP
// port; the executor's port, published by the gate, answers on the host.
// Then a change of the executor's rules remakes the gate alone, and the
// door taken away remakes the executor and the gate, the port kept.
func TestIntegrationExecutorDoor(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image := testImage(t, "BOXES_TEST_IMAGE", "hermes-box-lite:test")
	const box = "it-exec-door"
	removeBoxes(box)
	t.Cleanup(func() { removeBoxes(box) })
	testhost.StartInternet(t, map[string]string{"allowed.test": testhost.WebA, "other.test": testhost.WebB})

	dir := t.TempDir()
	yaml := func(executorEgress string) string {
		return fmt.Sprintf(`version: 1
fleet: it-exec-door
boxes:
  %s:
    egress: none
    dns: [%s]
    executor: {egress: %s}
`, box, testhost.DNSServer, executorEgress)
	}
	writeFile(t, filepath.Join(dir, "boxes.yaml"), yaml("[allowed.test]"))
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	p := boxes(t, dir, "plan")
	if !strings.Contains(p.stdout, "+ executor    = allowed.test (executor: egress:, through the gate)") {
		t.Errorf("the create plan does not show the executor's door:\n%s", p.stdout)
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	curlIn := func(service string, args ...string) string {
		out, _ := exec.Command("docker", append([]string{"exec", compose.ContainerName(box, service), "curl", "-sS", "-m", "5"}, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out))
	}
	passes := func(what, got string) {
		t.Helper()
		if !strings.Contains(got, "hello from "+testhost.WebA+":80") {
			t.Errorf("%s: %q, want an answer from %s", what, got, testhost.WebA)
		}
	}
	refused := func(what, got string) {
		t.Helper()
		if strings.Contains(got, "hello from") || got == "" {
			t.Errorf("%s: %q, want it refused", what, got)
		}
	}

	// The executor: its own rules, through the gate only.
	passes("the executor to a destination of its egress", curlIn(compose.ExecutorService, "http://allowed.test/"))
	refused("the executor to another", curlIn(compose.ExecutorService, "http://other.test/"))
	refused("the executor to the metadata address", curlIn(compose.ExecutorService, "http://"+testhost.Metadata+"/"))
	for _, target := range []string{"http://" + testhost.WebA + "/", "http://" + testhost.WebB + ":8080/"} {
		refused("the executor directly to "+target, curlIn(compose.ExecutorService, "--noproxy", "*", target))
	}

	// The agent: its own rules, and no way to the executor's.
	refused("the agent to the executor's destination", curlIn(compose.AgentService, "http://allowed.test/"))
	refused("the agent through the executor's proxy by name", curlIn(compose.AgentService, "-x", compose.ExecutorGateURL, "http://allowed.test/"))
	gate := compose.ContainerName(box, compose.GateService)
	execIP := dockerOut(t, "inspect", "-f", `{{(index .NetworkSettings.Networks "`+compose.ExecutorNetworkName(box)+`").IPAddress}}`, gate)
	insideIP := dockerOut(t, "inspect", "-f", `{{(index .NetworkSettings.Networks "`+compose.InsideNetworkName(box)+`").IPAddress}}`, gate)
	for _, ip := range []string{execIP, insideIP} {
		refused("the agent through the executor's proxy at "+ip, curlIn(compose.AgentService, "-x", "http://"+ip+":3130", "http://allowed.test/"))
	}
	if code := curlIn(compose.AgentService, "-o", "/dev/null", "-w", "%{http_code}", "http://executor:4788/mcp"); code == "000" || code == "" {
		t.Errorf("the agent does not reach the executor's MCP port: %q", code)
	}

	// The host: the executor's port, published by the gate.
	published := dockerOut(t, "port", gate, "4788/tcp")
	if out, err := exec.Command("curl", "-sS", "-m", "5", "-o", "/dev/null", "-w", "%{http_code}", "http://"+strings.Fields(published)[0]+"/mcp").CombinedOutput(); err != nil || string(out) != "401" {
		t.Errorf("the executor's published port %s: %s %v, want 401 without the token", published, out, err)
	}
	if ports := dockerOut(t, "inspect", "-f", "{{json .NetworkSettings.Ports}}", compose.ContainerName(box, compose.ExecutorService)); strings.Contains(ports, "HostPort") {
		t.Errorf("the executor behind its door publishes %s itself", ports)
	}

	// boxes egress shows the executor's side and its refusals; doctor checks it from inside.
	eg := boxes(t, dir, "egress", box, "--json")
	var report struct {
		Egress   string `json:"egress"`
		Executor struct {
			Door     bool     `json:"door"`
			Egress   string   `json:"egress"`
			Allow    []string `json:"allow"`
			Refusals []struct {
				Destination, Rule, Side string
			} `json:"refusals"`
		} `json:"executor"`
	}
	if err := json.Unmarshal([]byte(eg.stdout), &report); err != nil || eg.code != 0 {
		t.Fatalf("egress --json: %v %+v", err, eg)
	}
	found := false
	for _, r := range report.Executor.Refusals {
		found = found || (r.Destination == "other.test:80" && r.Side == "executor")
	}
	if report.Egress != "none" || !report.Executor.Door || report.Executor.Egress != "list" || len(report.Executor.Allow) != 1 || !found {
		t.Errorf("egress --json: %s", eg.stdout)
	}
	doc := boxes(t, dir, "doctor", box)
	for _, want := range []string{"executor: no way around the gate", "executor: gate refuses private", "executor: gate refuses the rest", "by the gate, which relays it"} {
		if !strings.Contains(doc.stdout, want) {
			t.Errorf("doctor lacks %q: %+v", want, doc)
		}
	}
	if doc.code != 0 {
		t.Errorf("doctor of a box whose doors hold: exit %d\n%s%s", doc.code, doc.stdout, doc.stderr)
	}

	// A change of the executor's rules remakes the gate alone.
	started := func() string {
		return dockerOut(t, "inspect", "-f", "{{.Id}} {{.State.StartedAt}}", compose.ContainerName(box, compose.AgentService), compose.ContainerName(box, compose.ExecutorService))
	}
	before := started()
	writeFile(t, filepath.Join(dir, "boxes.yaml"), yaml("none"))
	p = boxes(t, dir, "plan")
	for _, want := range []string{"executor.egress: 1 destination → none (− allowed.test)", "the agent keeps running"} {
		if !strings.Contains(p.stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, p.stdout)
		}
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply executor egress none: %+v", r)
	}
	if after := started(); after != before {
		t.Errorf("the agent or the executor was remade for a change of the executor's rules: %s, then %s", before, after)
	}
	refused("the executor under egress: none", curlIn(compose.ExecutorService, "http://allowed.test/"))
	if out, err := exec.Command("curl", "-sS", "-m", "5", "-o", "/dev/null", "-w", "%{http_code}", "http://"+strings.Fields(dockerOut(t, "port", gate, "4788/tcp"))[0]+"/mcp").CombinedOutput(); err != nil || string(out) != "401" {
		t.Errorf("the executor's published port after the gate was remade: %s %v", out, err)
	}
	if p := boxes(t, dir, "plan"); !strings.Contains(strings.ToLower(p.stdout), "no changes") {
		t.Errorf("plan after apply is not empty:\n%s", p.stdout)
	}

	// The door taken away remakes the executor and the gate, not the agent:
	// the executor reaches out by itself again and publishes its port itself,
	// on the port the gate published.
	agentBefore := dockerOut(t, "inspect", "-f", "{{.Id}} {{.State.StartedAt}}", compose.ContainerName(box, compose.AgentService))
	port := strings.Fields(dockerOut(t, "port", gate, "4788/tcp"))[0]
	writeFile(t, filepath.Join(dir, "boxes.yaml"), strings.Replace(yaml("none"), "    executor: {egress: none}\n", "", 1))
	p = boxes(t, dir, "plan")
	for _, want := range []string{"# " + box + "'s executor and gate must be replaced: the agent keeps running", "the executor's door goes"} {
		if !strings.Contains(p.stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, p.stdout)
		}
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply without the executor's door: %+v", r)
	}
	if after := dockerOut(t, "inspect", "-f", "{{.Id}} {{.State.StartedAt}}", compose.ContainerName(box, compose.AgentService)); after != agentBefore {
		t.Errorf("the agent was remade or restarted for the executor's door: %s, then %s", agentBefore, after)
	}
	passes("the executor by itself, without its door", curlIn(compose.ExecutorService, "--noproxy", "*", "http://"+testhost.WebA+"/"))
	if got := strings.Fields(dockerOut(t, "port", compose.ContainerName(box, compose.ExecutorService), "4788/tcp"))[0]; got != port {
		t.Errorf("the executor publishes %s, the gate published %s", got, port)
	}
	if p := boxes(t, dir, "plan"); !strings.Contains(strings.ToLower(p.stdout), "no changes") {
		t.Errorf("plan after the door went is not empty:\n%s", p.stdout)
	}
}
