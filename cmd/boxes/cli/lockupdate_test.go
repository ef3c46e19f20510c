package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hermes-box/boxes/pins"
	"github.com/hermes-box/boxes/spec"
)

// fakeRegistries serves the registry documents of pins/testdata as npm,
// nodejs.org and GitHub would, and points lock update at them. fail maps a
// request path to a status to answer instead.
type fakeRegistries struct {
	mu   sync.Mutex
	seen []string
	fail map[string]int
}

var registryFiles = map[string]string{
	"/npm/@openai%2fcodex":                    "npm-codex.json",
	"/npm/@anthropic-ai%2fclaude-code":        "npm-claude-code.json",
	"/npm/executor":                           "npm-executor.json",
	"/node/index.json":                        "node-index.json",
	"/node/v24.11.0/SHASUMS256.txt":           "node-v24.11.0-SHASUMS256.txt",
	"/api/repos/astral-sh/uv/releases/latest": "uv-release.json",
	"/gh/astral-sh/uv/releases/download/0.9.11/uv-x86_64-unknown-linux-gnu.tar.gz.sha256": "uv-x86_64-unknown-linux-gnu.tar.gz.sha256",
	"/api/repos/NousResearch/hermes-agent/releases/latest":                                "hermes-release.json",
}

const hermesCommit = "4f2c9e1a7b3d5c8e0f1a2b3c4d5e6f708192a3b4"

func startRegistries(t *testing.T) *fakeRegistries {
	t.Helper()
	f := &fakeRegistries{fail: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.seen = append(f.seen, r.URL.EscapedPath())
		status := f.fail[r.URL.EscapedPath()]
		f.mu.Unlock()
		if status != 0 {
			http.Error(w, `{"error":"injected"}`, status)
			return
		}
		if r.URL.Path == "/api/repos/NousResearch/hermes-agent/commits/v0.3.1" {
			w.Write([]byte(hermesCommit))
			return
		}
		name, ok := registryFiles[r.URL.EscapedPath()]
		if !ok {
			http.NotFound(w, r)
			return
		}
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "pins", "testdata", name))
		if err != nil {
			t.Error(err)
		}
		w.Write(data)
	}))
	t.Cleanup(srv.Close)
	t.Setenv(pins.EnvNPM, srv.URL+"/npm")
	t.Setenv(pins.EnvNode, srv.URL+"/node")
	t.Setenv(pins.EnvGitHubAPI, srv.URL+"/api")
	t.Setenv(pins.EnvGitHub, srv.URL+"/gh")
	return f
}

func (f *fakeRegistries) requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.seen)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

var tools = []string{"node", "claude", "codex", "executor", "hermes", "uv"}

func TestLockUpdateWritesEveryToolPin(t *testing.T) {
	reg := startRegistries(t)
	dir := composeDir(t, "")
	r := boxes(t, dir, append([]string{"lock", "update"}, tools...)...)
	if r.code != 0 {
		t.Fatalf("lock update: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	lock, err := spec.LoadLock(filepath.Join(dir, "boxes.lock"))
	if err != nil {
		t.Fatal(err)
	}
	want := spec.Pins{
		Node:     spec.ToolPin{Version: "24.11.0", Integrity: "sha256:065963ecad42d3aba6e250241a78fa59b42eec5a43f686487ea6b6ee07078f38"},
		Claude:   spec.ToolPin{Package: "@anthropic-ai/claude-code", Version: lock.Pins.Claude.Version, Integrity: lock.Pins.Claude.Integrity},
		Codex:    spec.ToolPin{Package: "@openai/codex", Version: "0.58.0", Integrity: "sha512-vvSpaO1ElAwK5EObHNSvAs5c78q0GPvtTRoTNoNg1qsm8bRL0wEyLfAIRJATjLXL+ykMsbIwj7EJzjTc2MFqXw=="},
		Executor: spec.ToolPin{Package: "executor", Version: lock.Pins.Executor.Version, Integrity: "sha512-D9GYmcvXXRv3/I+zHFAYb2ePj5lfSUST6RFGKhlm8zd9o3gp2YPKsZHsZKaQxnJ+A1IFn/TG1AwhUD17aLhcug=="},
		Hermes:   spec.ToolPin{Package: "NousResearch/hermes-agent", Version: hermesCommit},
		UV:       spec.ToolPin{Version: "0.9.11", Integrity: "sha256:be2cdf6bed8c5f869a837ec4116f0a216f81f2c2bd9a2950dc521de7553f1b6b"},
	}
	if lock.Pins != want {
		t.Errorf("pins\n%+v\nwant\n%+v", lock.Pins, want)
	}
	if lock.Pins.Claude.Version == "" || !strings.HasPrefix(lock.Pins.Claude.Integrity, "sha512-") || lock.Pins.Executor.Version == "" {
		t.Errorf("claude or executor pin incomplete: %+v %+v", lock.Pins.Claude, lock.Pins.Executor)
	}
	for _, line := range []string{"+ node      24.11.0 (LTS Krypton)", "+ codex     0.58.0 (dist-tag latest)", "+ hermes    4f2c9e1a7b3d (release v0.3.1)"} {
		if !strings.Contains(r.stdout, line) {
			t.Errorf("output lacks %q:\n%s", line, r.stdout)
		}
	}
	// The pins are what a build needs, but for the base image.
	if r := boxes(t, dir, "build"); r.code != 1 || !strings.Contains(r.stderr, "needs: pins.base (image and digest)\n") {
		t.Errorf("build with only the base missing: %d\n%s", r.code, r.stderr)
	}

	// Nothing newer: nothing written, not a byte.
	before := readFile(t, filepath.Join(dir, "boxes.lock"))
	r = boxes(t, dir, append([]string{"lock", "update"}, tools...)...)
	if r.code != 0 || !strings.Contains(r.stderr, "every pin is the newest; nothing written") || !strings.Contains(r.stdout, "  codex     0.58.0 (newest)") {
		t.Errorf("second update: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if after := readFile(t, filepath.Join(dir, "boxes.lock")); after != before {
		t.Errorf("an update with nothing new rewrote the lock:\n%s", after)
	}

	// --missing with every named pin set asks no registry.
	n := reg.requests()
	if r := boxes(t, dir, "lock", "update", "--missing", "node", "codex"); r.code != 0 || !strings.Contains(r.stderr, "nothing to resolve") {
		t.Errorf("--missing: %d\n%s", r.code, r.stderr)
	}
	if reg.requests() != n {
		t.Errorf("--missing with every pin set sent %d requests", reg.requests()-n)
	}
}

func TestLockUpdateDryRunAndJSON(t *testing.T) {
	startRegistries(t)
	old := "version: 1\npins:\n  codex:\n    package: \"@openai/codex\"\n    version: 0.50.0\n    integrity: sha512-" + strings.Repeat("A", 86) + "==\n"
	dir := composeDir(t, old)
	r := boxes(t, dir, "lock", "update", "--dry-run", "codex")
	if r.code != 0 || !strings.Contains(r.stdout, "~ codex     0.50.0 -> 0.58.0 (dist-tag latest)") || !strings.Contains(r.stderr, "dry run: nothing written") {
		t.Errorf("dry run: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := readFile(t, filepath.Join(dir, "boxes.lock")); got != old {
		t.Errorf("dry run wrote the lock:\n%s", got)
	}
	r = boxes(t, dir, "lock", "update", "--json", "codex", "uv")
	var changes []pins.Change
	if err := json.Unmarshal([]byte(r.stdout), &changes); err != nil || r.code != 0 {
		t.Fatalf("--json: %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	want := []pins.Change{
		{Pin: "codex", Old: "0.50.0", New: "0.58.0", From: "dist-tag latest", Changed: true},
		{Pin: "uv", New: "0.9.11", From: "release 0.9.11", Changed: true},
	}
	if len(changes) != 2 || changes[0] != want[0] || changes[1] != want[1] {
		t.Errorf("changes %+v, want %+v", changes, want)
	}
}

func TestLockUpdateRefusals(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		fail string // request path to answer with a 500
		want []string
		sent bool // whether any request may be sent
	}{
		"unknown pin": {args: []string{"claud"}, want: []string{`boxes: error: lock update: unknown pin "claud"`, "boxes: hint: the pins are base, node, claude, codex, executor, hermes, uv"}},
		"one registry fails": {args: tools, fail: "/npm/@openai%2fcodex", sent: true,
			want: []string{"codex: GET ", "/npm/@openai%2fcodex: 500 Internal Server Error", "boxes: hint: nothing was written"}},
		"a document the registry does not have": {args: []string{"hermes"}, fail: "/api/repos/NousResearch/hermes-agent/releases/latest", sent: true,
			want: []string{"hermes: GET ", "500 Internal Server Error"}},
	} {
		t.Run(name, func(t *testing.T) {
			reg := startRegistries(t)
			if tc.fail != "" {
				reg.fail[tc.fail] = http.StatusInternalServerError
			}
			old := "version: 1\npins:\n  node:\n    version: 22.1.0\n    integrity: sha256:" + strings.Repeat("0", 64) + "\n"
			dir := composeDir(t, old)
			r := boxes(t, dir, append([]string{"lock", "update"}, tc.args...)...)
			if r.code != 1 {
				t.Errorf("exit %d, want 1", r.code)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if got := readFile(t, filepath.Join(dir, "boxes.lock")); got != old {
				t.Errorf("a failed update changed the lock:\n%s", got)
			}
			if !tc.sent && reg.requests() != 0 {
				t.Errorf("%d requests sent for a refused command", reg.requests())
			}
		})
	}
}
