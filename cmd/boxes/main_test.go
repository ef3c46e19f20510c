package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/hermes-box/boxes/cmd/boxes/cli"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"boxes": func() { os.Exit(cli.Main(cli.StdStreams(), os.Args[1:])) },
	})
}

// TestScripts checks the command-line contract: each testdata/script/*.txtar
// runs the real boxes and compares its exact stdout and stderr. Scripts that
// need a Docker engine are not here: they are TestIntegration… tests.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(e *testscript.Env) error {
			// No engine is reached from a script: a command that tries fails fast.
			e.Setenv("DOCKER_HOST", "unix://"+e.WorkDir+"/no-docker.sock")
			e.Setenv("NO_COLOR", "1")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"registries": startRegistries,
		},
	})
}

// registryFiles are the documents of pins/testdata as npm, nodejs.org and
// GitHub serve them.
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

// startRegistries serves fake registries for the rest of the script and
// points lock update at them: "registries" or "registries fail PATH".
func startRegistries(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! registries")
	}
	fail := ""
	if len(args) == 2 && args[0] == "fail" {
		fail = args[1]
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.EscapedPath() == fail {
			http.Error(w, `{"error":"injected"}`, http.StatusInternalServerError)
			return
		}
		if r.URL.Path == "/api/repos/NousResearch/hermes-agent/commits/v0.3.1" {
			fmt.Fprint(w, "4f2c9e1a7b3d5c8e0f1a2b3c4d5e6f708192a3b4")
			return
		}
		name, ok := registryFiles[r.URL.EscapedPath()]
		if !ok {
			http.NotFound(w, r)
			return
		}
		http.ServeFile(w, r, filepath.Join("..", "..", "pins", "testdata", name))
	}))
	ts.Defer(srv.Close)
	ts.Setenv("BOXES_NPM_REGISTRY", srv.URL+"/npm")
	ts.Setenv("BOXES_NODE_DIST", srv.URL+"/node")
	ts.Setenv("BOXES_GITHUB_API", srv.URL+"/api")
	ts.Setenv("BOXES_GITHUB_DOWNLOADS", srv.URL+"/gh")
}
