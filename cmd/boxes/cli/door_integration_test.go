package cli

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/internal/testhost"
)

// TestIntegrationNetworkDoor proves the network door on the real engine,
// against a made-up internet in a network namespace (servers on
// 198.51.100.7 and .9, a stand-in metadata server on 169.254.77.77, a DNS
// server for test names) and a server on the engine's machine. From inside
// the agent: an allowed name and an allowed address and port pass through
// the gate; another destination, the metadata address, the engine's
// machine and a name rebound to a private address are refused by the gate;
// a direct connection has no route; the credential's header arrives
// upstream while its value is nowhere in the agent's container. Then a
// rule change remakes the gate alone: the agent keeps running. Real
// engine: what a container on the box's networks can reach, through its
// gate or around it.
func TestIntegrationNetworkDoor(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image := testImage(t, "BOXES_TEST_IMAGE", "hermes-box-lite:test")
	const box = "it-door"
	removeBoxes(box)
	t.Cleanup(func() { removeBoxes(box) })
	net := testhost.StartInternet(t, map[string]string{"allowed.test": testhost.WebA, "other.test": testhost.WebB})
	lan := testhost.LAN(t)

	secret := randomSecret(t)
	t.Setenv("BOXES_IT_DOOR_KEY", secret)
	dir := t.TempDir()
	yaml := func(egress string) string {
		return fmt.Sprintf(`version: 1
fleet: it-door
boxes:
  %s:
    egress: %s
    dns: [%s]
    credentials:
      up: {to: "allowed.test:80", header: x-api-key, from: "env:BOXES_IT_DOOR_KEY"}
`, box, egress, testhost.DNSServer)
	}
	writeFile(t, filepath.Join(dir, "boxes.yaml"), yaml(`[allowed.test, "198.51.100.9:8080"]`))
	if r := boxes(t, dir, "lock", "image", image); r.code != 0 {
		t.Fatalf("lock image: %+v", r)
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply: %+v", r)
	}
	agent := compose.ContainerName(box, compose.AgentService)
	curl := func(args ...string) string {
		out, _ := exec.Command("docker", append([]string{"exec", agent, "curl", "-sS", "-m", "5"}, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out))
	}
	passes := func(what, got, from string) {
		t.Helper()
		if !strings.Contains(got, "hello from "+from) {
			t.Errorf("%s: %q, want an answer from %s", what, got, from)
		}
	}
	refused := func(what, got string) {
		t.Helper()
		if strings.Contains(got, "hello from") || got == "" {
			t.Errorf("%s: %q, want it refused", what, got)
		}
	}

	passes("an allowed name", curl("http://allowed.test/"), testhost.WebA+":80")
	passes("an allowed address and port", curl("http://198.51.100.9:8080/"), testhost.WebB+":8080")
	refused("the allowed address on another port", curl("http://198.51.100.9/"))
	refused("a name not allowed", curl("http://other.test/"))
	refused("the metadata address through the gate", curl("http://"+testhost.Metadata+"/"))
	refused("the engine's machine through the gate", curl(fmt.Sprintf("http://172.17.0.1:%d/", lan)))
	for _, target := range []string{"http://" + testhost.WebA + "/", "http://" + testhost.Metadata + "/", fmt.Sprintf("http://172.17.0.1:%d/", lan)} {
		refused("a direct connection to "+target, curl("--noproxy", "*", target))
	}
	net.SetName("allowed.test", "172.17.0.1")
	refused("an allowed name rebound to the engine's machine", curl(fmt.Sprintf("http://allowed.test:%d/", lan)))
	net.SetName("allowed.test", testhost.WebA)

	// The credential: its header arrived upstream, its value is nowhere in the agent.
	found := false
	for _, s := range net.Seen() {
		if s.Server == testhost.WebA+":80" && s.Header.Get("X-Api-Key") == secret {
			found = true
		}
	}
	if !found {
		t.Errorf("the credential's header did not reach the upstream: %+v", net.Seen())
	}
	inspect := dockerOut(t, "inspect", agent)
	environ, _ := exec.Command("docker", "exec", agent, "sh", "-c", "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'; grep -rl "+secret+" /data 2>/dev/null; env").CombinedOutput()
	for what, where := range map[string]string{"docker inspect of the agent": inspect, "the agent's processes and /data": string(environ)} {
		if strings.Contains(where, secret) {
			t.Errorf("the credential's value is in %s", what)
		}
	}

	// boxes egress shows the rules and the refusals; doctor checks the door from inside.
	eg := boxes(t, dir, "egress", box, "--json")
	var report struct {
		Egress   string   `json:"egress"`
		Allow    []string `json:"allow"`
		Refusals []struct {
			Destination, Rule string
		} `json:"refusals"`
	}
	if err := json.Unmarshal([]byte(eg.stdout), &report); err != nil || eg.code != 0 {
		t.Fatalf("egress --json: %v %+v", err, eg)
	}
	rules := map[string]string{}
	for _, r := range report.Refusals {
		rules[r.Destination] = r.Rule
	}
	if report.Egress != "list" || len(report.Allow) != 2 || rules["other.test:80"] != "not-allowed" || rules[testhost.Metadata+":80"] == "" {
		t.Errorf("egress --json: %+v", report)
	}
	if strings.Contains(eg.stdout, secret) {
		t.Error("egress --json shows the credential's value")
	}
	if text := boxes(t, dir, "egress", box); !strings.Contains(text.stdout, "other.test:80") || !strings.Contains(text.stdout, "not-allowed") {
		t.Errorf("egress: %+v", text)
	}
	doc := boxes(t, dir, "doctor", box)
	for _, want := range []string{"no way around the gate", "gate answers", "gate refuses private", "gate refuses linklocal", "gate refuses the rest", "gate allows"} {
		if !strings.Contains(doc.stdout, want) {
			t.Errorf("doctor lacks %q: %+v", want, doc)
		}
	}
	if doc.code != 0 {
		t.Errorf("doctor of a box whose door holds: exit %d\n%s%s", doc.code, doc.stdout, doc.stderr)
	}

	// A rule change remakes the gate alone.
	before := dockerOut(t, "inspect", "-f", "{{.Id}} {{.State.StartedAt}}", agent)
	writeFile(t, filepath.Join(dir, "boxes.yaml"), yaml("none"))
	p := boxes(t, dir, "plan")
	for _, want := range []string{"egress: 2 destinations → none", "the agent keeps running"} {
		if !strings.Contains(p.stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, p.stdout)
		}
	}
	if r := boxes(t, dir, "apply", "--auto-approve"); r.code != 0 {
		t.Fatalf("apply egress none: %+v", r)
	}
	if after := dockerOut(t, "inspect", "-f", "{{.Id}} {{.State.StartedAt}}", agent); after != before {
		t.Errorf("the agent was remade or restarted for a gate-only change: %s, then %s", before, after)
	}
	refused("an address the list allowed, under egress: none", curl("http://198.51.100.9:8080/"))
	// A destination with a credential is allowed by that fact.
	passes("the credential's destination under egress: none", curl("http://allowed.test/"), testhost.WebA+":80")
	if p := boxes(t, dir, "plan"); !strings.Contains(p.stdout, "No changes") && !strings.Contains(p.stdout, "no changes") {
		t.Errorf("plan after apply is not empty:\n%s", p.stdout)
	}
}

func randomSecret(t *testing.T) string {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "sk-test-" + hex.EncodeToString(b)
}
