// Package guest_test tests the box image recipe: the guest scripts, the
// provision script and the image built from them. guest/ holds no Go
// package; these are tests only.
//
// Tests named TestIntegration… run against the real Docker engine through
// the docker CLI and are skipped under -short. They use the image
// hermes-box-lite:test and build it with scripts/test-image.sh when it is
// missing. Every container, network and volume they create carries the label
// boxes-test=1 and is removed when the test ends, failed or not.
package guest_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	testImage   = "hermes-box-lite:test"
	recipeImage = "hermes-box-lite:test-recipe"
	baseImage   = "hermes-box-lite-base:bookworm"
	testLabel   = "boxes-test=1"
	agentHome   = "/data/home/agent"
)

// ------------------------------------------------------------ helpers

// repoRoot is the source tree's root, this package's parent, where the
// recipe's Dockerfile, provision/ and guest/ are.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// run runs a command with a deadline and returns its combined output and
// exit code; a command that cannot start or times out fails the test.
func run(t *testing.T, timeout time.Duration, name string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %s: timed out after %s\n%s", name, strings.Join(args, " "), timeout, out.String())
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), exit.ExitCode()
	}
	if err != nil {
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return out.String(), 0
}

func docker(t *testing.T, args ...string) (string, int) {
	t.Helper()
	return run(t, 2*time.Minute, "docker", args...)
}

func mustDocker(t *testing.T, args ...string) string {
	t.Helper()
	out, code := docker(t, args...)
	if code != 0 {
		t.Fatalf("docker %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return strings.TrimSpace(out)
}

func randomSuffix(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

var (
	imageOnce sync.Once
	imageErr  error
)

// needImage skips under -short and makes sure the test image exists,
// building it with scripts/test-image.sh once per test binary if not.
func needImage(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a Docker engine; skipped under -short")
	}
	if out, code := run(t, 30*time.Second, "docker", "version", "--format", "{{.Server.Version}}"); code != 0 {
		t.Fatalf("no Docker engine answers (docker version: exit %d)\n%s", code, out)
	}
	imageOnce.Do(func() {
		if exec.Command("docker", "image", "inspect", testImage).Run() == nil &&
			exec.Command("docker", "image", "inspect", recipeImage).Run() == nil {
			return
		}
		cmd := exec.Command("bash", filepath.Join(repoRoot(t), "scripts", "test-image.sh"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			imageErr = fmt.Errorf("scripts/test-image.sh: %v\n%s", err, out)
		}
	})
	if imageErr != nil {
		t.Fatal(imageErr)
	}
}

// runOnce runs a throwaway container of the test image.
func runOnce(t *testing.T, args ...string) (string, int) {
	t.Helper()
	name := "hbtest-" + randomSuffix(t)
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", name).Run() })
	return docker(t, append([]string{"run", "--rm", "--name", name, "--label", testLabel}, args...)...)
}

// box is one box as the compose project runs it, made with the docker CLI:
// a private network, Executor reachable as "executor", the agent with its
// volume at /data.
type box struct {
	name, network, volume, agent, executor, token string
}

func startBox(t *testing.T, token string) *box {
	t.Helper()
	id := randomSuffix(t)
	b := &box{
		name:     "t" + id,
		network:  "hbtest-" + id,
		volume:   "hbtest-" + id + "-agent-data",
		agent:    "hbtest-" + id + "-agent",
		executor: "hbtest-" + id + "-executor",
		token:    token,
	}
	mustDocker(t, "network", "create", "--label", testLabel, b.network)
	t.Cleanup(func() { exec.Command("docker", "network", "rm", b.network).Run() })
	mustDocker(t, "volume", "create", "--label", testLabel, b.volume)
	t.Cleanup(func() { exec.Command("docker", "volume", "rm", "-f", b.volume).Run() })

	common := []string{
		"run", "-d", "--label", testLabel, "--init",
		"--network", b.network, "--sysctl", "net.ipv6.conf.all.disable_ipv6=1",
		"-e", "EXECUTOR_TOKEN=" + token, "-e", "BOX_NAME=" + b.name,
	}
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", "-v", b.executor).Run() })
	mustDocker(t, append(common, "--name", b.executor, "--hostname", "executor",
		"--network-alias", "executor", testImage, "/usr/local/bin/hb", "executor")...)

	t.Cleanup(func() {
		if t.Failed() {
			for _, c := range []string{b.agent, b.executor} {
				out, _ := exec.Command("docker", "logs", "--tail", "30", c).CombinedOutput()
				t.Logf("logs of %s:\n%s", c, out)
			}
		}
		exec.Command("docker", "rm", "-f", b.agent).Run()
	})
	mustDocker(t, append(common, "--name", b.agent, "--hostname", "agent",
		"-e", "EXECUTOR_HOST=http://executor:4788",
		"-e", "HOME="+agentHome,
		"-e", "CLAUDE_CONFIG_DIR="+agentHome+"/.claude",
		"-e", "CODEX_HOME="+agentHome+"/.codex",
		"-e", "HERMES_HOME="+agentHome+"/.hermes",
		"-v", b.volume+":/data",
		testImage, "/usr/local/bin/hb", "agent")...)
	b.waitHealthy(t)
	return b
}

// hb runs `hb ARGS` in the agent container; env entries are K=V.
func (b *box) hb(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	return b.in(t, b.agent, env, append([]string{"hb"}, args...)...)
}

func (b *box) in(t *testing.T, container string, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := []string{"exec"}
	for _, e := range env {
		cmd = append(cmd, "-e", e)
	}
	return docker(t, append(append(cmd, container), args...)...)
}

func (b *box) sh(t *testing.T, script string) string {
	t.Helper()
	out, code := b.in(t, b.agent, nil, "bash", "-c", script)
	if code != 0 {
		t.Fatalf("in the agent: %s: exit %d\n%s", script, code, out)
	}
	return strings.TrimSpace(out)
}

func (b *box) waitHealthy(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, agentCode := b.in(t, b.agent, nil, "hb", "health", "agent")
		_, execCode := b.in(t, b.executor, nil, "hb", "health", "executor")
		if agentCode == 0 && execCode == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("box not healthy after 30s (hb health agent: exit %d, executor: exit %d)", agentCode, execCode)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

type doctorReport struct {
	OK     *bool `json:"ok"`
	Checks []struct {
		Name   string `json:"name"`
		OK     *bool  `json:"ok"`
		Detail string `json:"detail"`
	} `json:"checks"`
}

// doctorJSON runs hb doctor --json and checks the shape of its report.
func (b *box) doctorJSON(t *testing.T, env ...string) (doctorReport, int) {
	t.Helper()
	cmd := []string{"exec"}
	for _, e := range env {
		cmd = append(cmd, "-e", e)
	}
	// stdout only: the report must be valid JSON by itself.
	out, err := exec.Command("docker", append(cmd, b.agent, "hb", "doctor", "--json")...).Output()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var r doctorReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("hb doctor --json is not JSON: %v\n%s", err, out)
	}
	if r.OK == nil || len(r.Checks) == 0 {
		t.Fatalf("hb doctor --json lacks ok or checks:\n%s", out)
	}
	for _, c := range r.Checks {
		if c.Name == "" || c.OK == nil || c.Detail == "" {
			t.Errorf("check without name, ok or detail: %+v", c)
		}
	}
	if *r.OK != (code == 0) {
		t.Errorf("hb doctor --json: ok=%v but exit %d", *r.OK, code)
	}
	return r, code
}

func (r doctorReport) detail(name string) string {
	for _, c := range r.Checks {
		if c.Name == name {
			return c.Detail
		}
	}
	return ""
}

// ------------------------------------------------------------ static checks

func scripts(t *testing.T) []string {
	t.Helper()
	root := repoRoot(t)
	var files []string
	for _, pattern := range []string{"guest/hb", "guest/*.sh", "provision/*.sh", "scripts/test-image.sh"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 5 {
		t.Fatalf("found only %v", files)
	}
	return files
}

func TestShellcheck(t *testing.T) {
	if _, err := exec.LookPath("shellcheck"); err != nil {
		t.Fatal("shellcheck is not installed; the recipe's scripts must pass it (apt-get install shellcheck)")
	}
	files := scripts(t)
	cmd := exec.Command("shellcheck", append([]string{"-x"}, files...)...)
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("shellcheck: %v\n%s", err, out)
	}
}

// Scripts that run on their own stop at the first error; the sourced ones
// (profile.sh in login shells, lib.sh) must not change the caller's options.
func TestScriptsSetEU(t *testing.T) {
	for _, f := range scripts(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		executable := bytes.HasPrefix(b, []byte("#!"))
		setEU := regexp.MustCompile(`(?m)^set -eu$`).Match(b)
		if executable != setEU {
			t.Errorf("%s: starts with #! %v, has set -eu %v", f, executable, setEU)
		}
	}
}

// The integrity checks of provision.sh, against digests computed here.
func TestProvisionVerifiesDigests(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pkg.tgz")
	content := []byte("not really a tarball\n")
	if err := os.WriteFile(file, content, 0o644); err != nil {
		t.Fatal(err)
	}
	sum512 := sha512.Sum512(content)
	sri := "sha512-" + base64.StdEncoding.EncodeToString(sum512[:])
	sum256 := sha256.Sum256(content)
	hex256 := hex.EncodeToString(sum256[:])
	lib := filepath.Join(repoRoot(t), "provision", "lib.sh")

	sh := func(script string) (string, int) {
		t.Helper()
		return run(t, 30*time.Second, "bash", "-c", "set -eu; STEP=test; . \"$0\"; "+script, lib)
	}
	if out, code := sh(`sri_sha512 "` + file + `"`); code != 0 || out != sri {
		t.Errorf("sri_sha512: %q (exit %d), want %q", out, code, sri)
	}
	if out, code := sh(`verify_integrity "` + file + `" "` + sri + `"; echo verified`); code != 0 || !strings.Contains(out, "verified") {
		t.Errorf("verify_integrity with the right digest: exit %d\n%s", code, out)
	}
	wrong := "sha512-" + base64.StdEncoding.EncodeToString(make([]byte, 64))
	out, code := sh(`verify_integrity "` + file + `" "` + wrong + `"; echo verified`)
	if code == 0 || strings.Contains(out, "verified") || !strings.Contains(out, "provision: step test: integrity mismatch") {
		t.Errorf("verify_integrity with a wrong digest: exit %d\n%s", code, out)
	}
	out, code = sh(`verify_integrity "` + file + `" "sha1-abc"`)
	if code == 0 || !strings.Contains(out, "not a sha512 integrity") {
		t.Errorf("verify_integrity with sha1: exit %d\n%s", code, out)
	}
	if out, code := sh(`verify_sha256 "` + file + `" "` + hex256 + `"; echo verified`); code != 0 || !strings.Contains(out, "verified") {
		t.Errorf("verify_sha256 with the right digest: exit %d\n%s", code, out)
	}
	out, code = sh(`verify_sha256 "` + file + `" "` + strings.Repeat("0", 64) + `"`)
	if code == 0 || !strings.Contains(out, "provision: step test: checksum mismatch") {
		t.Errorf("verify_sha256 with a wrong digest: exit %d\n%s", code, out)
	}
	out, code = sh(`INSTALL_X=maybe; enabled INSTALL_X`)
	if code == 0 || !strings.Contains(out, "INSTALL_X must be 0 or 1") {
		t.Errorf("enabled with a bad value: exit %d\n%s", code, out)
	}
	if out, code := sh(`INSTALL_OFF=0; unset INSTALL_UNSET; ! enabled INSTALL_OFF && enabled INSTALL_UNSET && echo right`); code != 0 || !strings.Contains(out, "right") {
		t.Errorf("enabled: exit %d\n%s", code, out)
	}
}

// ------------------------------------------------------------ the image

// TestIntegrationImageProvisioned: the test image has the agent user with
// passwordless sudo, /data and the sudoers file with their owners and
// modes, and hb versions naming every tool. Real engine: it runs the image
// the recipe built, of which the fake holds only an ID.
func TestIntegrationImageProvisioned(t *testing.T) {
	needImage(t)
	if out, code := runOnce(t, "-u", "agent", testImage, "sudo", "-n", "true"); code != 0 {
		t.Errorf("agent has no passwordless sudo: exit %d\n%s", code, out)
	}
	out, code := runOnce(t, testImage, "bash", "-c",
		`id -u agent; getent passwd agent | cut -d: -f6; stat -c '%a %U:%G' /etc/sudoers.d/agent /data; ls -A /data | wc -l; grep -c '=skipped$' /opt/hermes-box/versions.env`)
	want := "1000\n/data/home/agent\n440 root:root\n711 root:root\n0\n7\n"
	if code != 0 || out != want {
		t.Errorf("image layout:\n%s\nwant:\n%s", out, want)
	}

	out, code = runOnce(t, testImage, "hb", "versions", "--json")
	if code != 0 {
		t.Fatalf("hb versions --json: exit %d\n%s", code, out)
	}
	var versions map[string]*string
	if err := json.Unmarshal([]byte(out), &versions); err != nil {
		t.Fatalf("hb versions --json is not JSON: %v\n%s", err, out)
	}
	for _, tool := range []string{"node", "claude", "codex", "hermes", "executor", "uv", "nvim", "tmux"} {
		if _, ok := versions[tool]; !ok {
			t.Errorf("hb versions --json has no %s", tool)
		}
	}
	if versions["tmux"] == nil || versions["executor"] == nil || versions["claude"] != nil {
		t.Errorf("hb versions --json: tmux and executor (the stand-in) present, claude absent, got %s", out)
	}
}

// ------------------------------------------------------------ a box

// TestIntegrationBox: hb in a box made with the docker CLI alone (doctor,
// the layout of /data, init repairing a restored volume, wire-mcp,
// quiesce and resume, the executor paused or stopped, the agent stopping
// on SIGTERM). Real engine: these are processes, files and signals inside
// real containers, none of which the fake runs.
func TestIntegrationBox(t *testing.T) {
	needImage(t)
	const token = "tok-one"
	b := startBox(t, token)

	t.Run("doctor passes", func(t *testing.T) {
		out, code := b.hb(t, nil, "doctor")
		if code != 0 || !strings.Contains(out, "is healthy") {
			t.Fatalf("hb doctor: exit %d\n%s", code, out)
		}
		r, _ := b.doctorJSON(t)
		if !*r.OK {
			t.Errorf("hb doctor --json: ok=false\n%+v", r)
		}
		if d := r.detail("mcp handshake"); !strings.Contains(d, "protocol 2025-06-18") {
			t.Errorf("mcp handshake detail: %q", d)
		}
		if d := r.detail("tool nvim"); !strings.Contains(d, "INSTALL_APT=0") {
			t.Errorf("a skipped tool should be a warning naming its switch, got %q", d)
		}
	})

	t.Run("layout", func(t *testing.T) {
		got := b.sh(t, `stat -c '%n %U:%G %a' /data /data/home /data/home/agent \
			/data/home/agent/.claude /data/home/agent/.codex /data/home/agent/.hermes \
			/data/home/agent/.config /data/home/agent/.local/share /data/home/agent/.local/state /data/home/agent/.cache \
			/data/home/agent/workspace`)
		want := strings.Join([]string{
			"/data root:root 711",
			"/data/home root:root 711",
			"/data/home/agent agent:agent 700",
			"/data/home/agent/.claude agent:agent 700",
			"/data/home/agent/.codex agent:agent 700",
			"/data/home/agent/.hermes agent:agent 700",
			"/data/home/agent/.config agent:agent 700",
			"/data/home/agent/.local/share agent:agent 700",
			"/data/home/agent/.local/state agent:agent 700",
			"/data/home/agent/.cache agent:agent 700",
			"/data/home/agent/workspace agent:agent 700",
		}, "\n")
		if got != want {
			t.Errorf("layout:\n%s\nwant:\n%s", got, want)
		}
		if got := b.sh(t, `stat -c '%U %a' /data/home/agent/.claude/.claude.json /data/home/agent/.codex/config.toml`); got != "agent 600\nagent 600" {
			t.Errorf("MCP config files: %q, want agent 600", got)
		}
	})

	t.Run("init repairs a restored volume and is idempotent", func(t *testing.T) {
		b.sh(t, `chmod 0755 /data /data/home/agent && chown 1234:1234 /data/home`)
		for i := 0; i < 2; i++ {
			if out, code := b.hb(t, nil, "init"); code != 0 {
				t.Fatalf("hb init: exit %d\n%s", code, out)
			}
		}
		if got := b.sh(t, `stat -c '%U:%G %a' /data /data/home /data/home/agent`); got != "root:root 711\nroot:root 711\nagent:agent 700" {
			t.Errorf("after hb init: %q", got)
		}
		if out, code := b.hb(t, nil, "doctor"); code != 0 {
			t.Errorf("hb doctor after init: exit %d\n%s", code, out)
		}
	})

	t.Run("wrong token fails with 401", func(t *testing.T) {
		out, code := b.hb(t, []string{"EXECUTOR_TOKEN=wrong"}, "doctor")
		if code == 0 || !strings.Contains(out, "HTTP 401") {
			t.Errorf("hb doctor with a wrong token: exit %d\n%s", code, out)
		}
		r, code := b.doctorJSON(t, "EXECUTOR_TOKEN=wrong")
		if *r.OK || code == 0 || !strings.Contains(r.detail("mcp handshake"), "401") {
			t.Errorf("hb doctor --json with a wrong token: ok=%v exit %d, handshake %q", *r.OK, code, r.detail("mcp handshake"))
		}
	})

	t.Run("wire-mcp replaces stale wiring", func(t *testing.T) {
		b.sh(t, `cat >/data/home/agent/.codex/config.toml <<'EOF'
model = "o3"

[mcp_servers.other]
url = "http://other/mcp"

[mcp_servers.executor]
url = "http://old-host:4788/mcp"
http_headers = { Authorization = "Bearer old-token" }

[mcp_servers.executor.env]
STALE = "1"

[profiles.fast]
model = "fast"
EOF
echo '{"theme":"dark","mcpServers":{"other":{"type":"stdio","command":"x"},"executor":{"type":"http","url":"http://old-host:4788/mcp","headers":{"Authorization":"Bearer old-token","X-Stale":"1"}}}}' >/data/home/agent/.claude/.claude.json`)
		env := []string{"EXECUTOR_TOKEN=tok-two"}
		if out, code := b.hb(t, env, "wire-mcp"); code != 0 {
			t.Fatalf("hb wire-mcp: exit %d\n%s", code, out)
		}
		codex1 := b.sh(t, `cat /data/home/agent/.codex/config.toml`)
		if out, code := b.hb(t, env, "wire-mcp"); code != 0 {
			t.Fatalf("hb wire-mcp again: exit %d\n%s", code, out)
		}
		codex := b.sh(t, `cat /data/home/agent/.codex/config.toml`)
		if codex != codex1 {
			t.Errorf("a second wire-mcp changed config.toml:\n%s\n---\n%s", codex1, codex)
		}
		if n := strings.Count(codex, "[mcp_servers.executor]"); n != 1 {
			t.Errorf("config.toml has %d [mcp_servers.executor] tables:\n%s", n, codex)
		}
		for _, want := range []string{`model = "o3"`, "[mcp_servers.other]", "[profiles.fast]",
			`url = "http://executor:4788/mcp"`, `Authorization = "Bearer tok-two"`} {
			if !strings.Contains(codex, want) {
				t.Errorf("config.toml lacks %s:\n%s", want, codex)
			}
		}
		for _, stale := range []string{"old-host", "old-token", "STALE", "[mcp_servers.executor.env]"} {
			if strings.Contains(codex, stale) {
				t.Errorf("config.toml still has %s:\n%s", stale, codex)
			}
		}

		var claude struct {
			Theme      string `json:"theme"`
			MCPServers map[string]struct {
				Type    string            `json:"type"`
				URL     string            `json:"url"`
				Headers map[string]string `json:"headers"`
			} `json:"mcpServers"`
		}
		raw := b.sh(t, `cat /data/home/agent/.claude/.claude.json`)
		if err := json.Unmarshal([]byte(raw), &claude); err != nil {
			t.Fatalf(".claude.json: %v\n%s", err, raw)
		}
		e := claude.MCPServers["executor"]
		if claude.Theme != "dark" || claude.MCPServers["other"].Type != "stdio" {
			t.Errorf(".claude.json lost other keys:\n%s", raw)
		}
		if e.Type != "http" || e.URL != "http://executor:4788/mcp" ||
			len(e.Headers) != 1 || e.Headers["Authorization"] != "Bearer tok-two" {
			t.Errorf(".claude.json executor entry: %+v", e)
		}

		// Wired to a token Executor does not know: the wiring check passes,
		// the handshake does not.
		r, _ := b.doctorJSON(t, env...)
		if !strings.Contains(r.detail("mcp wiring"), "claude and codex") || !strings.Contains(r.detail("mcp handshake"), "401") {
			t.Errorf("doctor with tok-two: wiring %q, handshake %q", r.detail("mcp wiring"), r.detail("mcp handshake"))
		}
		// The injected token wins again on the next init.
		if out, code := b.hb(t, nil, "init"); code != 0 {
			t.Fatalf("hb init: exit %d\n%s", code, out)
		}
		if out, code := b.hb(t, nil, "doctor"); code != 0 {
			t.Errorf("hb doctor after rewiring with the box token: exit %d\n%s", code, out)
		}
	})

	t.Run("quiesce and resume", func(t *testing.T) {
		b.sh(t, `sudo -u agent -H tmux new-session -d -s main`)
		if out, code := b.hb(t, nil, "quiesce"); code != 0 {
			t.Fatalf("hb quiesce: exit %d\n%s", code, out)
		}
		if got := b.sh(t, `test -e /data/.hb/quiesced && ps -o stat= -u agent | cut -c1 | sort -u`); got != "T" {
			t.Errorf("agent processes while quiesced: %q, want all stopped (T)", got)
		}
		if out, _ := b.hb(t, nil, "status"); !strings.Contains(out, "quiesced  yes") {
			t.Errorf("hb status while quiesced:\n%s", out)
		}
		if out, code := b.hb(t, nil, "wire-mcp"); code == 0 || !strings.Contains(out, "quiesced") {
			t.Errorf("hb wire-mcp while quiesced: exit %d\n%s", code, out)
		}
		if out, code := b.hb(t, nil, "resume"); code != 0 {
			t.Fatalf("hb resume: exit %d\n%s", code, out)
		}
		if got := b.sh(t, `test ! -e /data/.hb/quiesced && ps -o stat= -u agent | cut -c1 | sort -u`); got != "S" {
			t.Errorf("agent processes after resume: %q, want running (S)", got)
		}
	})

	t.Run("a start while quiesced waits for resume", func(t *testing.T) {
		if out, code := b.hb(t, nil, "quiesce", "--no-freeze"); code != 0 {
			t.Fatalf("hb quiesce: exit %d\n%s", code, out)
		}
		mustDocker(t, "restart", "-t", "10", b.agent)
		time.Sleep(time.Second)
		if out, code := b.hb(t, nil, "health", "agent"); code == 0 {
			t.Errorf("healthy while quiesced at start:\n%s", out)
		}
		if logs := mustDocker(t, "logs", "--tail", "3", b.agent); !strings.Contains(logs, "waiting for hb resume") {
			t.Errorf("agent log does not say it waits:\n%s", logs)
		}
		if out, code := b.hb(t, nil, "resume"); code != 0 || !strings.Contains(out, "box ready") {
			t.Fatalf("hb resume: exit %d\n%s", code, out)
		}
		b.waitHealthy(t)
	})

	t.Run("executor not answering", func(t *testing.T) {
		mustDocker(t, "pause", b.executor)
		defer mustDocker(t, "unpause", b.executor)
		start := time.Now()
		out, code := b.hb(t, nil, "doctor")
		if code == 0 || !strings.Contains(out, "did not answer within 5s") {
			t.Errorf("hb doctor against a paused Executor: exit %d\n%s", code, out)
		}
		if took := time.Since(start); took > 15*time.Second {
			t.Errorf("hb doctor took %s; its timeouts are bounded", took)
		}
		if r, _ := b.doctorJSON(t); *r.OK {
			t.Error("hb doctor --json: ok=true against a paused Executor")
		}
	})

	t.Run("executor stopped", func(t *testing.T) {
		mustDocker(t, "stop", "-t", "10", b.executor)
		if got := mustDocker(t, "inspect", "-f", "{{.State.ExitCode}}", b.executor); got != "0" {
			t.Errorf("Executor exit code on SIGTERM: %s, want 0", got)
		}
		out, code := b.hb(t, nil, "doctor")
		if code == 0 || !strings.Contains(out, "cannot resolve executor") {
			t.Errorf("hb doctor with Executor stopped: exit %d\n%s", code, out)
		}
		if r, _ := b.doctorJSON(t); *r.OK {
			t.Error("hb doctor --json: ok=true with Executor stopped")
		}
	})

	t.Run("agent stops cleanly", func(t *testing.T) {
		start := time.Now()
		mustDocker(t, "stop", "-t", "10", b.agent)
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("docker stop took %s: the supervisor does not exit on SIGTERM", took)
		}
		if got := mustDocker(t, "inspect", "-f", "{{.State.ExitCode}}", b.agent); got != "0" {
			t.Errorf("agent exit code on SIGTERM: %s, want 0", got)
		}
	})
}
