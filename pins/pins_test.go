package pins_test

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-box/boxes/pins"
	"github.com/hermes-box/boxes/spec"
)

// Media types the registries must be asked for.
const (
	acceptNPM    = "application/vnd.npm.install-v1+json"
	acceptGitHub = "application/vnd.github+json"
	acceptSHA    = "application/vnd.github.sha"
)

// The hashes in testdata.
const (
	codexIntegrity    = "sha512-vvSpaO1ElAwK5EObHNSvAs5c78q0GPvtTRoTNoNg1qsm8bRL0wEyLfAIRJATjLXL+ykMsbIwj7EJzjTc2MFqXw=="
	claudeIntegrity   = "sha512-bIvPgRZgtT0smg/xErHI3J/K+3jBXtdSYRJpYyPbqpPBdJNFcfrNug1SuoB0V4mgT3hyidm8opBjVbBJbS8c6g=="
	executorIntegrity = "sha512-D9GYmcvXXRv3/I+zHFAYb2ePj5lfSUST6RFGKhlm8zd9o3gp2YPKsZHsZKaQxnJ+A1IFn/TG1AwhUD17aLhcug=="
	node24SHA         = "065963ecad42d3aba6e250241a78fa59b42eec5a43f686487ea6b6ee07078f38"
	node22SHA         = "5bbb09123e7a84f9857e8e3135aebe88556e7221d7a07fbbb2a2ea4a4876bf44"
	node20SHA         = "b23b2eb737cc75f060bca886a2f5fc081f14606f933fde9ddaf0a0732befc312"
	uvSHA             = "be2cdf6bed8c5f869a837ec4116f0a216f81f2c2bd9a2950dc521de7553f1b6b"
	releaseCommit     = "4f2c9e1a7b3d5c8e0f1a2b3c4d5e6f708192a3b4"
	branchCommit      = "0123456789abcdef0123456789abcdef01234567"
)

// Request URIs, as the fake registry sees them.
const (
	codexURI      = "/npm/@openai%2fcodex"
	claudeURI     = "/npm/@anthropic-ai%2fclaude-code"
	executorURI   = "/npm/executor"
	nodeIndexURI  = "/node/dist/index.json"
	node24SumsURI = "/node/dist/v24.11.0/SHASUMS256.txt"
	node22SumsURI = "/node/dist/v22.21.1/SHASUMS256.txt"
	node20SumsURI = "/node/dist/v20.19.5/SHASUMS256.txt"
	uvReleaseURI  = "/api/repos/astral-sh/uv/releases/latest"
	uvSumURI      = "/gh/astral-sh/uv/releases/download/0.9.11/uv-x86_64-unknown-linux-gnu.tar.gz.sha256"
	hermesRelURI  = "/api/repos/NousResearch/hermes-agent/releases/latest"
	hermesRepoURI = "/api/repos/NousResearch/hermes-agent"
	hermesTagURI  = "/api/repos/NousResearch/hermes-agent/commits/v0.3.1"
	hermesMainURI = "/api/repos/NousResearch/hermes-agent/commits/main"
)

// route is one canned response of the fake registry.
type route struct {
	status int    // 0: 200
	file   string // testdata file to serve
	body   string // served when file is empty
	ctype  string // Content-Type; "" = application/json
}

// notFound is GitHub's and npm's answer for what is not there.
var notFound = route{status: http.StatusNotFound, body: `{"message":"Not Found","documentation_url":"https://docs.github.com/rest"}`}

// goodRoutes answers every request of every tool's success path.
func goodRoutes() map[string]route {
	return map[string]route{
		codexURI:      {file: "npm-codex.json", ctype: acceptNPM},
		claudeURI:     {file: "npm-claude-code.json"}, // a full document, as a registry ignoring Accept sends
		executorURI:   {file: "npm-executor.json", ctype: acceptNPM},
		nodeIndexURI:  {file: "node-index.json"},
		node24SumsURI: {file: "node-v24.11.0-SHASUMS256.txt", ctype: "text/plain"},
		node22SumsURI: {file: "node-v22.21.1-SHASUMS256.txt", ctype: "text/plain"},
		node20SumsURI: {file: "node-v20.19.5-SHASUMS256.txt", ctype: "text/plain"},
		uvReleaseURI:  {file: "uv-release.json"},
		uvSumURI:      {file: "uv-x86_64-unknown-linux-gnu.tar.gz.sha256", ctype: "application/octet-stream"},
		hermesRelURI:  {file: "hermes-release.json"},
		hermesRepoURI: {file: "hermes-repo.json"},
		hermesTagURI:  {body: releaseCommit, ctype: acceptSHA},
		hermesMainURI: {body: branchCommit, ctype: acceptSHA},
	}
}

// request is what the fake registry saw of one request.
type request struct {
	URI, Accept string
}

// registry is a fake npm registry, Node dist site and GitHub in one server:
// the Resolver it returns has its bases at /npm, /node/dist, /api and /gh.
type registry struct {
	t      *testing.T
	url    string
	routes map[string]route

	mu     sync.Mutex
	seen   []request
	agents []string
}

func newRegistry(t *testing.T, routes map[string]route) (*registry, *pins.Resolver) {
	t.Helper()
	reg := &registry{t: t, routes: routes}
	srv := httptest.NewServer(reg)
	t.Cleanup(srv.Close)
	reg.url = srv.URL
	return reg, &pins.Resolver{
		Client:    srv.Client(),
		NPM:       srv.URL + "/npm",
		Node:      srv.URL + "/node/dist/", // a trailing slash is allowed
		GitHubAPI: srv.URL + "/api",
		GitHub:    srv.URL + "/gh",
	}
}

func (reg *registry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reg.mu.Lock()
	reg.seen = append(reg.seen, request{URI: r.RequestURI, Accept: r.Header.Get("Accept")})
	reg.agents = append(reg.agents, r.Header.Get("User-Agent"))
	reg.mu.Unlock()
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	rt, ok := reg.routes[r.RequestURI]
	if !ok {
		rt = notFound
	}
	body := []byte(rt.body)
	if rt.file != "" {
		var err error
		if body, err = os.ReadFile(filepath.Join("testdata", rt.file)); err != nil {
			reg.t.Error(err)
		}
	}
	ctype := rt.ctype
	if ctype == "" {
		ctype = "application/json"
	}
	w.Header().Set("Content-Type", ctype)
	if rt.status != 0 {
		w.WriteHeader(rt.status)
	}
	w.Write(body)
}

// requests returns the requests seen so far.
func (reg *registry) requests() []request {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	return slices.Clone(reg.seen)
}

func TestLookup(t *testing.T) {
	tests := []struct {
		name    string
		tool    string
		current spec.ToolPin
		routes  map[string]route // replacing goodRoutes' entries
		want    pins.Result
		seen    []request
	}{
		{
			name: "codex, abbreviated document",
			tool: "codex",
			want: pins.Result{Pin: spec.ToolPin{Package: "@openai/codex", Version: "0.58.0", Integrity: codexIntegrity}, From: "dist-tag latest"},
			seen: []request{{codexURI, acceptNPM}},
		},
		{
			name: "claude, full document",
			tool: "claude",
			want: pins.Result{Pin: spec.ToolPin{Package: "@anthropic-ai/claude-code", Version: "2.0.32", Integrity: claudeIntegrity}, From: "dist-tag latest"},
			seen: []request{{claudeURI, acceptNPM}},
		},
		{
			name: "executor, unscoped",
			tool: "executor",
			want: pins.Result{Pin: spec.ToolPin{Package: "executor", Version: "1.2.0", Integrity: executorIntegrity}, From: "dist-tag latest"},
			seen: []request{{executorURI, acceptNPM}},
		},
		{
			name:    "codex from the package the lock names",
			tool:    "codex",
			current: spec.ToolPin{Package: "@acme/codex-fork", Version: "0.1.0"},
			routes:  map[string]route{"/npm/@acme%2fcodex-fork": {file: "npm-codex.json"}},
			want:    pins.Result{Pin: spec.ToolPin{Package: "@acme/codex-fork", Version: "0.58.0", Integrity: codexIntegrity}, From: "dist-tag latest"},
			seen:    []request{{"/npm/@acme%2fcodex-fork", acceptNPM}},
		},
		{
			name: "integrity with several hashes keeps the sha512 one",
			tool: "executor",
			routes: map[string]route{executorURI: {body: `{"dist-tags":{"latest":"1.2.0"},"versions":{"1.2.0":{"dist":{
				"integrity":"sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk= ` + executorIntegrity + `"}}}}`}},
			want: pins.Result{Pin: spec.ToolPin{Package: "executor", Version: "1.2.0", Integrity: executorIntegrity}, From: "dist-tag latest"},
			seen: []request{{executorURI, acceptNPM}},
		},
		{
			name: "node, newest LTS with a linux-x64 build",
			tool: "node",
			want: pins.Result{Pin: spec.ToolPin{Version: "24.11.0", Integrity: "sha256:" + node24SHA}, From: "LTS Krypton"},
			seen: []request{{nodeIndexURI, "application/json"}, {node24SumsURI, "text/plain"}},
		},
		{
			name:    "node stays on the pinned major",
			tool:    "node",
			current: spec.ToolPin{Version: "22.11.0", Integrity: "sha256:" + node24SHA},
			want:    pins.Result{Pin: spec.ToolPin{Version: "22.21.1", Integrity: "sha256:" + node22SHA}, From: "LTS Jod"},
			seen:    []request{{nodeIndexURI, "application/json"}, {node22SumsURI, "text/plain"}},
		},
		{
			name:    "node pinned with a leading v",
			tool:    "node",
			current: spec.ToolPin{Version: "v20.1.0"},
			want:    pins.Result{Pin: spec.ToolPin{Version: "20.19.5", Integrity: "sha256:" + node20SHA}, From: "LTS Iron"},
			seen:    []request{{nodeIndexURI, "application/json"}, {node20SumsURI, "text/plain"}},
		},
		{
			name:   "node checksum in upper case, binary-mode marker",
			tool:   "node",
			routes: map[string]route{node24SumsURI: {body: strings.ToUpper(node24SHA) + " *node-v24.11.0-linux-x64.tar.xz\n", ctype: "text/plain"}},
			want:   pins.Result{Pin: spec.ToolPin{Version: "24.11.0", Integrity: "sha256:" + node24SHA}, From: "LTS Krypton"},
			seen:   []request{{nodeIndexURI, "application/json"}, {node24SumsURI, "text/plain"}},
		},
		{
			name: "uv, latest release",
			tool: "uv",
			want: pins.Result{Pin: spec.ToolPin{Version: "0.9.11", Integrity: "sha256:" + uvSHA}, From: "release 0.9.11"},
			seen: []request{{uvReleaseURI, acceptGitHub}, {uvSumURI, "text/plain"}},
		},
		{
			name:   "uv checksum file with the bare hash",
			tool:   "uv",
			routes: map[string]route{uvSumURI: {body: uvSHA + "\n", ctype: "text/plain"}},
			want:   pins.Result{Pin: spec.ToolPin{Version: "0.9.11", Integrity: "sha256:" + uvSHA}, From: "release 0.9.11"},
			seen:   []request{{uvReleaseURI, acceptGitHub}, {uvSumURI, "text/plain"}},
		},
		{
			name: "hermes, commit of the latest release",
			tool: "hermes",
			want: pins.Result{Pin: spec.ToolPin{Package: "NousResearch/hermes-agent", Version: releaseCommit}, From: "release v0.3.1"},
			seen: []request{{hermesRelURI, acceptGitHub}, {hermesTagURI, acceptSHA}},
		},
		{
			name:   "hermes without releases follows the default branch",
			tool:   "hermes",
			routes: map[string]route{hermesRelURI: notFound, hermesMainURI: {body: branchCommit + "\n", ctype: acceptSHA}},
			want:   pins.Result{Pin: spec.ToolPin{Package: "NousResearch/hermes-agent", Version: branchCommit}, From: "branch main"},
			seen:   []request{{hermesRelURI, acceptGitHub}, {hermesRepoURI, acceptGitHub}, {hermesMainURI, acceptSHA}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			routes := goodRoutes()
			maps.Copy(routes, tt.routes)
			reg, r := newRegistry(t, routes)
			got, err := r.Lookup(context.Background(), tt.tool, tt.current)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Lookup = %+v, want %+v", got, tt.want)
			}
			if seen := reg.requests(); !slices.Equal(seen, tt.seen) {
				t.Errorf("requests = %+v, want %+v", seen, tt.seen)
			}
			pin, err := r.Resolve(context.Background(), tt.tool, tt.current)
			if err != nil || pin != tt.want.Pin {
				t.Errorf("Resolve = %+v, %v; want %+v", pin, err, tt.want.Pin)
			}
		})
	}
}

func TestLookupErrors(t *testing.T) {
	npmDoc := func(dist string) route {
		return route{body: `{"name":"@openai/codex","dist-tags":{"latest":"0.58.0"},"versions":{"0.58.0":{"version":"0.58.0"` + dist + `}}}`}
	}
	sha256Of32Bytes := "sha512-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
	tests := []struct {
		name    string
		tool    string
		current spec.ToolPin
		routes  map[string]route
		want    []string // substrings of the error; {srv} is the server's URL
	}{
		{name: "unknown tool", tool: "python",
			want: []string{`unknown tool "python": known tools are node, claude, codex, executor, hermes, uv`}},
		{name: "empty tool", tool: "", want: []string{`unknown tool ""`}},

		// npm
		{name: "npm 404", tool: "codex", routes: map[string]route{codexURI: {status: 404, body: `{"error":"Not found"}`}},
			want: []string{"codex: package @openai/codex not found in registry {srv}/npm"}},
		{name: "npm 500", tool: "codex", routes: map[string]route{codexURI: {status: 500, body: "oops", ctype: "text/plain"}},
			want: []string{"codex: GET {srv}" + codexURI + ": 500 Internal Server Error"}},
		{name: "npm 503 with a message", tool: "claude", routes: map[string]route{claudeURI: {status: 503, body: `{"error":"service  unavailable\n"}`}},
			want: []string{"claude: GET {srv}" + claudeURI + ": 503 Service Unavailable: service unavailable"}},
		{name: "npm malformed JSON", tool: "codex", routes: map[string]route{codexURI: {body: `{"dist-tags": {"latest": "0.58.0"`}},
			want: []string{"codex: {srv}" + codexURI + ": malformed JSON"}},
		{name: "npm versions of the wrong type", tool: "codex", routes: map[string]route{codexURI: {body: `{"dist-tags":{"latest":"1.0.0"},"versions":[]}`}},
			want: []string{"codex: {srv}" + codexURI + ": malformed JSON"}},
		{name: "npm missing dist-tags", tool: "codex", routes: map[string]route{codexURI: {body: `{"name":"@openai/codex","versions":{"0.58.0":{}}}`}},
			want: []string{"codex: {srv}" + codexURI + ": no dist-tags.latest"}},
		{name: "npm dist-tags without latest", tool: "codex", routes: map[string]route{codexURI: {body: `{"dist-tags":{"next":"0.59.0"},"versions":{}}`}},
			want: []string{"no dist-tags.latest"}},
		{name: "npm latest not in versions", tool: "codex", routes: map[string]route{codexURI: {body: `{"dist-tags":{"latest":"9.9.9"},"versions":{"0.58.0":{}}}`}},
			want: []string{"codex: {srv}" + codexURI + ": dist-tags.latest is 9.9.9, which is not in versions"}},
		{name: "npm latest a range", tool: "codex", routes: map[string]route{codexURI: {body: `{"dist-tags":{"latest":"^0.58.0"},"versions":{"^0.58.0":{}}}`}},
			want: []string{`dist-tags.latest "^0.58.0" is not a plain version`}},
		{name: "npm latest a path", tool: "codex", routes: map[string]route{codexURI: {body: `{"dist-tags":{"latest":"../../x"},"versions":{}}`}},
			want: []string{`dist-tags.latest "../../x" is not a plain version`}},
		{name: "npm only shasum", tool: "codex", routes: map[string]route{codexURI: npmDoc(`,"dist":{"shasum":"da39a3ee5e6b4b0d3255bfef95601890afd80709"}`)},
			want: []string{"codex: {srv}" + codexURI + ": version 0.58.0: no dist.integrity, only a sha1 dist.shasum"}},
		{name: "npm no dist", tool: "codex", routes: map[string]route{codexURI: npmDoc("")},
			want: []string{"version 0.58.0: no dist.integrity"}},
		{name: "npm sha1 integrity", tool: "codex", routes: map[string]route{codexURI: npmDoc(`,"dist":{"integrity":"sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk="}`)},
			want: []string{`dist.integrity "sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk=" has no sha512 hash`}},
		{name: "npm integrity not base64", tool: "codex", routes: map[string]route{codexURI: npmDoc(`,"dist":{"integrity":"sha512-not*base64"}`)},
			want: []string{`dist.integrity "sha512-not*base64" is not sha512-<base64 of 64 bytes>`}},
		{name: "npm integrity too short", tool: "codex", routes: map[string]route{codexURI: npmDoc(`,"dist":{"integrity":"` + sha256Of32Bytes + `"}`)},
			want: []string{"is not sha512-<base64 of 64 bytes>"}},
		{name: "npm package name from the lock invalid", tool: "codex", current: spec.ToolPin{Package: "../etc/passwd"},
			want: []string{`codex: "../etc/passwd" is not an npm package name`}},
		{name: "npm package name with a query", tool: "claude", current: spec.ToolPin{Package: "@a/b?write=1"},
			want: []string{`claude: "@a/b?write=1" is not an npm package name`}},

		// node
		{name: "node index 404", tool: "node", routes: map[string]route{nodeIndexURI: {status: 404, body: "Not Found", ctype: "text/html"}},
			want: []string{"node: GET {srv}" + nodeIndexURI + ": 404 Not Found"}},
		{name: "node index 500", tool: "node", routes: map[string]route{nodeIndexURI: {status: 500}},
			want: []string{"node: GET {srv}" + nodeIndexURI + ": 500 Internal Server Error"}},
		{name: "node index malformed", tool: "node", routes: map[string]route{nodeIndexURI: {body: `[{"version":"v24.11.0",`}},
			want: []string{"node: {srv}" + nodeIndexURI + ": malformed JSON"}},
		{name: "node index not an array", tool: "node", routes: map[string]route{nodeIndexURI: {body: `{"version":"v24.11.0"}`}},
			want: []string{"node: {srv}" + nodeIndexURI + ": malformed JSON"}},
		{name: "node lts true", tool: "node", routes: map[string]route{nodeIndexURI: {body: `[{"version":"v24.11.0","lts":true,"files":["linux-x64"]}]`}},
			want: []string{"malformed JSON", "lts is true, want false or a code name"}},
		{name: "node version without v", tool: "node", routes: map[string]route{nodeIndexURI: {body: `[{"version":"24.11.0","lts":"Krypton","files":["linux-x64"]}]`}},
			want: []string{"node: {srv}" + nodeIndexURI + `: release 0: version "24.11.0" is not vMAJOR.MINOR.PATCH`}},
		{name: "node release without version", tool: "node", routes: map[string]route{nodeIndexURI: {body: `[{"lts":"Krypton","files":["linux-x64"]}]`}},
			want: []string{`release 0: version "" is not vMAJOR.MINOR.PATCH`}},
		{name: "node no LTS", tool: "node", routes: map[string]route{nodeIndexURI: {body: `[
				{"version":"v25.2.0","lts":false,"files":["linux-x64"]},
				{"version":"v24.11.0","lts":"Krypton","files":["linux-arm64","win-x64-zip"]},
				{"version":"v23.0.0","lts":false,"files":["linux-x64"]}]`}},
			want: []string{"node: {srv}" + nodeIndexURI + ": no LTS release with a linux-x64 build"}},
		{name: "node empty index", tool: "node", routes: map[string]route{nodeIndexURI: {body: `[]`}},
			want: []string{"no LTS release with a linux-x64 build"}},
		{name: "node no LTS of the pinned major", tool: "node", current: spec.ToolPin{Version: "23.11.1"},
			want: []string{"node: {srv}" + nodeIndexURI + ": no LTS release of Node 23 with a linux-x64 build"}},
		{name: "node pinned version not a version", tool: "node", current: spec.ToolPin{Version: "lts/jod"},
			want: []string{`node: current pin "lts/jod" is not MAJOR.MINOR.PATCH`}},
		{name: "node SHASUMS 404", tool: "node", routes: map[string]route{node24SumsURI: notFound},
			want: []string{"node: GET {srv}" + node24SumsURI + ": 404 Not Found"}},
		{name: "node SHASUMS without the file", tool: "node", routes: map[string]route{node24SumsURI: {body: node22SHA + "  node-v24.11.0-linux-x64.tar.gz\n" + node20SHA + "  node-v24.11.0-linux-arm64.tar.xz\n", ctype: "text/plain"}},
			want: []string{"node: {srv}" + node24SumsURI + ": no checksum for node-v24.11.0-linux-x64.tar.xz"}},
		{name: "node SHASUMS bad hash", tool: "node", routes: map[string]route{node24SumsURI: {body: "abc123  node-v24.11.0-linux-x64.tar.xz\n", ctype: "text/plain"}},
			want: []string{"node: {srv}" + node24SumsURI + `: checksum "abc123" for node-v24.11.0-linux-x64.tar.xz is not 64 hex digits`}},
		{name: "node SHASUMS hash not hex", tool: "node", routes: map[string]route{node24SumsURI: {body: strings.Repeat("g", 64) + "  node-v24.11.0-linux-x64.tar.xz\n", ctype: "text/plain"}},
			want: []string{"is not 64 hex digits"}},

		// uv
		{name: "uv release 404", tool: "uv", routes: map[string]route{uvReleaseURI: notFound},
			want: []string{"uv: GET {srv}" + uvReleaseURI + ": 404 Not Found: Not Found"}},
		{name: "uv rate limited", tool: "uv", routes: map[string]route{uvReleaseURI: {status: 403, body: `{"message":"API rate limit exceeded for 192.0.2.1.","documentation_url":"https://docs.github.com/rest"}`}},
			want: []string{"uv: GET {srv}" + uvReleaseURI + ": 403 Forbidden: API rate limit exceeded for 192.0.2.1."}},
		{name: "uv release malformed", tool: "uv", routes: map[string]route{uvReleaseURI: {body: `<html>`}},
			want: []string{"uv: {srv}" + uvReleaseURI + ": malformed JSON"}},
		{name: "uv release without tag", tool: "uv", routes: map[string]route{uvReleaseURI: {body: `{"name":"0.9.11","draft":false}`}},
			want: []string{"uv: {srv}" + uvReleaseURI + ": no tag_name"}},
		{name: "uv tag not a version", tool: "uv", routes: map[string]route{uvReleaseURI: {body: `{"tag_name":"latest/../../x"}`}},
			want: []string{`uv: {srv}` + uvReleaseURI + `: tag_name "latest/../../x" is not a plain version`}},
		{name: "uv checksum 404", tool: "uv", routes: map[string]route{uvSumURI: {status: 404, body: "Not Found", ctype: "text/plain"}},
			want: []string{"uv: GET {srv}" + uvSumURI + ": 404 Not Found"}},
		{name: "uv checksum bad hash", tool: "uv", routes: map[string]route{uvSumURI: {body: "deadbeef  uv-x86_64-unknown-linux-gnu.tar.gz\n"}},
			want: []string{"uv: {srv}" + uvSumURI + `: checksum "deadbeef" for uv-x86_64-unknown-linux-gnu.tar.gz is not 64 hex digits`}},
		{name: "uv checksum of another file", tool: "uv", routes: map[string]route{uvSumURI: {body: uvSHA + "  uv-aarch64-unknown-linux-gnu.tar.gz\n"}},
			want: []string{"checksum is for uv-aarch64-unknown-linux-gnu.tar.gz, want uv-x86_64-unknown-linux-gnu.tar.gz"}},
		{name: "uv checksum empty", tool: "uv", routes: map[string]route{uvSumURI: {body: "\n"}},
			want: []string{"uv: {srv}" + uvSumURI + ": empty checksum file"}},
		{name: "uv checksum page instead", tool: "uv", routes: map[string]route{uvSumURI: {body: "<html> <body> not found </body> </html>"}},
			want: []string{`want "<sha256>  uv-x86_64-unknown-linux-gnu.tar.gz", got 6 fields`}},
		{name: "uv checksum too large", tool: "uv", routes: map[string]route{uvSumURI: {body: strings.Repeat("0", 1<<20+1)}},
			want: []string{"uv: GET {srv}" + uvSumURI + ": response is larger than 1048576 bytes"}},

		// hermes
		{name: "hermes release 500 does not fall back", tool: "hermes", routes: map[string]route{hermesRelURI: {status: 500, body: `{"message":"Server Error"}`}},
			want: []string{"hermes: GET {srv}" + hermesRelURI + ": 500 Internal Server Error: Server Error"}},
		{name: "hermes release malformed", tool: "hermes", routes: map[string]route{hermesRelURI: {body: `{"tag_name":`}},
			want: []string{"hermes: {srv}" + hermesRelURI + ": malformed JSON"}},
		{name: "hermes release tag not a ref", tool: "hermes", routes: map[string]route{hermesRelURI: {body: `{"tag_name":"v1..2"}`}},
			want: []string{`hermes: {srv}` + hermesRelURI + `: "v1..2" is not a usable git ref`}},
		{name: "hermes release tag with a space", tool: "hermes", routes: map[string]route{hermesRelURI: {body: `{"tag_name":"v1 2"}`}},
			want: []string{`"v1 2" is not a usable git ref`}},
		{name: "hermes no release, repository 404", tool: "hermes", routes: map[string]route{hermesRelURI: notFound, hermesRepoURI: notFound},
			want: []string{"hermes: GET {srv}" + hermesRepoURI + ": 404 Not Found"}},
		{name: "hermes no release, no default branch", tool: "hermes", routes: map[string]route{hermesRelURI: notFound, hermesRepoURI: {body: `{"name":"hermes-agent"}`}},
			want: []string{"hermes: {srv}" + hermesRepoURI + ": no default_branch"}},
		{name: "hermes commit unknown", tool: "hermes", routes: map[string]route{hermesTagURI: {status: 422, body: `{"message":"No commit found for SHA: v0.3.1"}`}},
			want: []string{"hermes: GET {srv}" + hermesTagURI + ": 422 Unprocessable Entity: No commit found for SHA: v0.3.1"}},
		{name: "hermes commit as JSON", tool: "hermes", routes: map[string]route{hermesTagURI: {body: `{"sha":"` + releaseCommit + `"}`}},
			want: []string{"hermes: {srv}" + hermesTagURI + `: "{\"sha\":\"4f2c9e1a`, "is not a 40-hex commit hash"}},
		{name: "hermes commit short", tool: "hermes", routes: map[string]route{hermesTagURI: {body: "4f2c9e1"}},
			want: []string{`"4f2c9e1" is not a 40-hex commit hash`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			routes := goodRoutes()
			maps.Copy(routes, tt.routes)
			reg, r := newRegistry(t, routes)
			got, err := r.Lookup(context.Background(), tt.tool, tt.current)
			if err == nil {
				t.Fatalf("Lookup = %+v, want an error", got)
			}
			if got != (pins.Result{}) {
				t.Errorf("Lookup returned %+v with its error", got)
			}
			for _, want := range tt.want {
				want = strings.ReplaceAll(want, "{srv}", reg.url)
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q\ndoes not contain %q", err, want)
				}
			}
		})
	}
}

// TestHermesReleaseErrorNoFallback checks that only a 404 sends hermes to
// the default branch.
func TestHermesReleaseErrorNoFallback(t *testing.T) {
	routes := goodRoutes()
	routes[hermesRelURI] = route{status: http.StatusBadGateway}
	reg, r := newRegistry(t, routes)
	if _, err := r.Lookup(context.Background(), "hermes", spec.ToolPin{}); err == nil {
		t.Fatal("want an error")
	}
	if seen := reg.requests(); len(seen) != 1 || seen[0].URI != hermesRelURI {
		t.Errorf("requests = %+v, want only %s", seen, hermesRelURI)
	}
}

func TestUserAgent(t *testing.T) {
	reg, r := newRegistry(t, goodRoutes())
	r.UserAgent = "boxes/1.2.3 (lock update)"
	for _, tool := range pins.Tools {
		if _, err := r.Lookup(context.Background(), tool, spec.ToolPin{}); err != nil {
			t.Fatal(err)
		}
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if len(reg.agents) < len(pins.Tools) {
		t.Fatalf("saw %d requests", len(reg.agents))
	}
	for i, ua := range reg.agents {
		if ua != r.UserAgent {
			t.Errorf("request %s: User-Agent %q, want %q", reg.seen[i].URI, ua, r.UserAgent)
		}
	}
}

func TestDefaultClient(t *testing.T) {
	_, r := newRegistry(t, goodRoutes())
	r.Client = nil
	got, err := r.Resolve(context.Background(), "executor", spec.ToolPin{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != "1.2.0" {
		t.Errorf("Version = %q, want 1.2.0", got.Version)
	}
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tool := range pins.Tools {
		t.Run(tool, func(t *testing.T) {
			reg, r := newRegistry(t, goodRoutes())
			_, err := r.Resolve(ctx, tool, spec.ToolPin{})
			if !errors.Is(err, context.Canceled) {
				t.Errorf("error = %v, want context.Canceled", err)
			}
			if !strings.HasPrefix(err.Error(), tool+": ") {
				t.Errorf("error %q does not name %s", err, tool)
			}
			if seen := reg.requests(); len(seen) != 0 {
				t.Errorf("requests = %+v, want none", seen)
			}
		})
	}
}

// TestCancelledInFlight cancels while the registry has not answered yet.
func TestCancelledInFlight(t *testing.T) {
	arrived := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	r := &pins.Resolver{Client: srv.Client(), NPM: srv.URL}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-arrived
		cancel()
	}()
	done := make(chan error, 1)
	go func() {
		_, err := r.Resolve(ctx, "codex", spec.ToolPin{})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Resolve did not return after its context was cancelled")
	}
}

func TestResolveAll(t *testing.T) {
	reg, r := newRegistry(t, goodRoutes())
	current := map[string]spec.ToolPin{"node": {Version: "22.1.0"}}
	got, err := r.ResolveAll(context.Background(), pins.Tools, func(tool string) spec.ToolPin { return current[tool] })
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]pins.Result{
		"node":     {Pin: spec.ToolPin{Version: "22.21.1", Integrity: "sha256:" + node22SHA}, From: "LTS Jod"},
		"claude":   {Pin: spec.ToolPin{Package: "@anthropic-ai/claude-code", Version: "2.0.32", Integrity: claudeIntegrity}, From: "dist-tag latest"},
		"codex":    {Pin: spec.ToolPin{Package: "@openai/codex", Version: "0.58.0", Integrity: codexIntegrity}, From: "dist-tag latest"},
		"executor": {Pin: spec.ToolPin{Package: "executor", Version: "1.2.0", Integrity: executorIntegrity}, From: "dist-tag latest"},
		"hermes":   {Pin: spec.ToolPin{Package: "NousResearch/hermes-agent", Version: releaseCommit}, From: "release v0.3.1"},
		"uv":       {Pin: spec.ToolPin{Version: "0.9.11", Integrity: "sha256:" + uvSHA}, From: "release 0.9.11"},
	}
	if !maps.Equal(got, want) {
		t.Errorf("ResolveAll =\n%+v\nwant\n%+v", got, want)
	}
	uris := make([]string, 0)
	for _, s := range reg.requests() {
		uris = append(uris, s.URI)
	}
	slices.Sort(uris)
	wantURIs := []string{claudeURI, codexURI, executorURI, hermesRelURI, hermesTagURI, nodeIndexURI, node22SumsURI, uvReleaseURI, uvSumURI}
	slices.Sort(wantURIs)
	if !slices.Equal(uris, wantURIs) {
		t.Errorf("requests =\n%q\nwant\n%q", uris, wantURIs)
	}
}

func TestResolveAllCollectsErrors(t *testing.T) {
	routes := goodRoutes()
	routes[codexURI] = route{status: http.StatusInternalServerError}
	routes[uvReleaseURI] = notFound
	_, r := newRegistry(t, routes)
	got, err := r.ResolveAll(context.Background(), []string{"uv", "codex", "python", "executor", "codex"}, nil)
	if err == nil {
		t.Fatal("want an error")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "uv: ") || !strings.HasPrefix(lines[1], "codex: ") || !strings.HasPrefix(lines[2], `unknown tool "python"`) {
		t.Errorf("error lines = %q, want uv, codex and python in that order", lines)
	}
	if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, []string{"executor"}) {
		t.Errorf("resolved %q, want only executor", keys)
	}
}
