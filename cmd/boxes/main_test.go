package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/cmd/boxes/cli"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/fakeengine"
	"github.com/hermes-box/boxes/spec"
)

// fakeEngineVar names the file of the fake engines' state. It is read here,
// in the test binary only: set (TestFakeScripts sets it), the boxes a
// script runs reaches fake engines kept in that file instead of Docker.
const fakeEngineVar = "BOXES_FAKE_ENGINE"

var update = flag.Bool("update", false, "rewrite the expected output in testdata/script-fake/*.txtar")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"boxes": func() {
			path := os.Getenv(fakeEngineVar)
			if path == "" {
				os.Exit(cli.Main(cli.StdStreams(), os.Args[1:]))
			}
			fake := cli.Connectors{spec.HostDocker: func() engine.Connector { return &fakeengine.Connector{Path: path} }}
			os.Exit(cli.MainOn(cli.StdStreams(), os.Args[1:], fake))
		},
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
			"archive":    writeArchive,
			"steady":     steady,
		},
	})
}

// TestFakeScripts checks the command line's contract on engines that boxes
// cannot tell from Docker: each testdata/script-fake/*.txtar runs the real
// boxes against fake engines (internal/fakeengine) whose state is one file
// of the script's work directory, and compares its exact stdout and stderr.
// The "fake" command changes that state behind boxes' back.
func TestFakeScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script-fake",
		UpdateScripts: *update,
		Setup: func(e *testscript.Env) error {
			e.Setenv(fakeEngineVar, filepath.Join(e.WorkDir, "engines.json"))
			// A command that reaches for Docker itself fails fast.
			e.Setenv("DOCKER_HOST", "unix://"+e.WorkDir+"/no-docker.sock")
			e.Setenv("NO_COLOR", "1")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"fake":   fakeEngine,
			"steady": steady,
			"bybox":  byBox,
			"data":   dataHolds,
			"exits":  exitsWith,
		},
	})
}

// fakeEngine changes the fake engines' state as someone other than boxes
// would (HOST is "local" for the local engine):
//
//	fake image HOST ID          the engine of HOST gets image ID
//	fake stop BOX               BOX's containers are stopped (docker stop)
//	fake crash BOX SERVICE CODE BOX's container of SERVICE exits with CODE
//	fake kill BOX SERVICE       BOX's container of SERVICE is killed (docker kill)
//	fake pause BOX SERVICE      BOX's container of SERVICE is paused (docker pause)
//	fake rm BOX SERVICE         BOX's container of SERVICE is removed (docker rm -f)
//	fake disconnect BOX SERVICE NETWORK
//	                            it is taken off network NETWORK
//	fake dying HOST BOX         BOX's executors made from now on exit when started
//	fake healed HOST BOX        … and no longer
//	fake expire BOX             BOX's lease ended on 2000-01-01
//	fake rival HOST BOX HOLDER  the next claim of BOX loses to HOLDER's, made
//	                            just before it (a lease that raced it)
//	fake write BOX TEXT         BOX's /data holds TEXT (the volume's content)
//	fake log BOX SERVICE FILE   BOX's container of SERVICE prints FILE
//	fake machine HOST [ADDR…]   the engine's machine of HOST has ADDRs
//	fake label BOX SERVICE KEY[=VALUE]
//	                            its label KEY is VALUE (without =, it has none)
func fakeEngine(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: fake image|stop|crash|kill|pause|rm|disconnect|dying|healed|expire|rival|write|log|machine|label ARGS")
	}
	host := func(name string) string {
		if name == "local" {
			return ""
		}
		return name
	}
	want := func(n int) {
		if len(args) != n+1 {
			ts.Fatalf("fake %s takes %d arguments", args[0], n)
		}
	}
	ts.Check(fakeengine.Edit(ts.Getenv(fakeEngineVar), func(s *fakeengine.State) error {
		switch args[0] {
		case "image":
			want(2)
			s.AddImage(host(args[1]), args[2])
		case "stop":
			want(1)
			return s.StopBehind(args[1])
		case "crash":
			want(3)
			code, err := strconv.Atoi(args[3])
			if err != nil {
				return err
			}
			return s.Crash(args[1], args[2], code)
		case "kill":
			want(2)
			return s.KillBehind(args[1], args[2])
		case "pause":
			want(2)
			return s.PauseBehind(args[1], args[2])
		case "rm":
			want(2)
			return s.RemoveBehind(args[1], args[2])
		case "disconnect":
			want(3)
			return s.Disconnect(args[1], args[2], args[3])
		case "dying", "healed":
			want(2)
			s.SetDying(host(args[1]), args[2], args[0] == "dying")
		case "expire":
			want(1)
			return s.ExpireLease(args[1], time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))
		case "rival":
			want(3)
			s.SetRival(host(args[1]), args[2], args[3])
		case "write":
			want(2)
			return s.WriteData(args[1], args[2])
		case "log":
			want(3)
			return s.Log(args[1], args[2], ts.ReadFile(args[3]))
		case "machine":
			if len(args) < 2 {
				ts.Fatalf("fake machine takes a host and its addresses")
			}
			s.SetMachine(host(args[1]), args[2:])
		case "label":
			want(3)
			key, value, set := strings.Cut(args[3], "=")
			return s.Label(args[1], args[2], key, value, !set)
		default:
			ts.Fatalf("fake: unknown command %q", args[0])
		}
		return nil
	}))
}

// exitsWith runs a program as exec does and checks its exit code, which
// exec and ! exec do not tell apart: "exits CODE PROGRAM [ARGS…]".
func exitsWith(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROGRAM [ARGS…]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	var exit *exec.ExitError
	switch err := ts.Exec(args[1], args[2:]...); {
	case errors.As(err, &exit):
		got = exit.ExitCode()
	case err != nil:
		ts.Fatalf("%s: %v", args[1], err)
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

// dataHolds checks what a box's /data holds on the fake engines, as fake
// write put it there and helper containers copied it: "[!] data BOX TEXT".
func dataHolds(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: data BOX TEXT")
	}
	s, err := fakeengine.Load(ts.Getenv(fakeEngineVar))
	ts.Check(err)
	got, err := s.Data(args[0])
	ts.Check(err)
	if (got == args[1]) == neg {
		ts.Fatalf("box %s's /data holds %q; want %s%q", args[0], got, map[bool]string{true: "anything but ", false: ""}[neg], args[1])
	}
}

// TestIntegrationScripts checks the results commands print against a real
// engine: each testdata/script-engine/*.txtar runs the real boxes on the
// test image (BOXES_TEST_IMAGE, default hermes-box-lite:test). Its boxes
// are removed afterwards, whatever happened. Real engine: save and load
// carry a real box's /data through archives, and a backup counts as a
// box's by its data volume's creation time on the engine.
func TestIntegrationScripts(t *testing.T) {
	if testing.Short() {
		t.Skip("real Docker engine test")
	}
	image := os.Getenv("BOXES_TEST_IMAGE")
	if image == "" {
		image = "hermes-box-lite:test"
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script-engine",
		Setup: func(e *testscript.Env) error {
			e.Setenv("BOXES_TEST_IMAGE", image)
			e.Setenv("NO_COLOR", "1")
			e.Defer(func() {
				// Every box a script declares goes, with its volumes.
				file := filepath.Join(e.WorkDir, "boxes.yaml")
				for _, name := range spec.ReadNames(file).Boxes {
					cli.MainContext(context.Background(), cli.Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard},
						[]string{"-f", file, "rm", name, "--confirm", name})
				}
			})
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){"saved": savedMatches},
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

// writeArchive writes a small archive of box alpha, saved at a fixed time:
// "archive FILE PASSPHRASE [flip|truncate]". flip changes one byte of the
// encrypted payload, truncate cuts off its end.
func writeArchive(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: archive FILE PASSPHRASE|key=IDENTITY-FILE [flip|truncate]")
	}
	var data bytes.Buffer
	tw := tar.NewWriter(&data)
	for _, d := range []string{"data/", "data/home/", "data/home/agent/"} {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755})
	}
	for _, f := range [][2]string{{"data/home/agent/.bashrc", "# mine\n"}, {"data/home/agent/notes", "all work and no play\n"}} {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f[0], Mode: 0o644, Size: int64(len(f[1]))})
		tw.Write([]byte(f[1]))
	}
	tw.Close()
	old := archive.ScryptWorkFactor
	archive.ScryptWorkFactor = 10
	defer func() { archive.ScryptWorkFactor = old }()
	var r age.Recipient
	if idFile, ok := strings.CutPrefix(args[1], "key="); ok {
		id, err := age.GenerateX25519Identity()
		ts.Check(err)
		ts.Check(os.WriteFile(ts.MkAbs(idFile), []byte(id.String()+"\n"), 0o600))
		r = id.Recipient()
	} else {
		pr, err := archive.PassphraseRecipient(args[1])
		ts.Check(err)
		r = pr
	}
	var out bytes.Buffer
	m := archive.Manifest{Box: "alpha", Created: time.Date(2026, 12, 2, 10, 15, 0, 0, time.UTC), Image: "sha256:" + strings.Repeat("ab", 32)}
	_, err := archive.Write(&out, m, &data, r)
	ts.Check(err)
	b := out.Bytes()
	if len(args) == 3 {
		switch args[2] {
		case "flip":
			b[len(b)-40] ^= 0x10
		case "truncate":
			b = b[:len(b)-100]
		default:
			ts.Fatalf("archive: %q is neither flip nor truncate", args[2])
		}
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), b, 0o600))
}

// volatile are the parts of progress lines that differ from run to run: the
// time of day, and how fast and long a read took.
var volatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ `), "TIME "},
	{regexp.MustCompile(` in [0-9.]+m?s, [0-9.]+ [KMG]?i?B/s`), " in DURATION, RATE"},
	{regexp.MustCompile(`(?m)^Apply complete in [0-9.]+m?s:`), "Apply complete in DURATION:"},
}

// steady rewrites FILE with the volatile parts of its progress lines
// replaced by words, so that a script compares the rest exactly: "steady FILE".
func steady(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: steady FILE")
	}
	b := []byte(ts.ReadFile(args[0]))
	for _, v := range volatile {
		b = v.re.ReplaceAll(b, []byte(v.with))
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), b, 0o600))
}

// progressLine is a progress line once steady: "TIME box: what".
var progressLine = regexp.MustCompile(`^TIME ([^ :]+): `)

// byBox rewrites FILE as steady does, then orders each run of progress
// lines by box, keeping each box's own lines in the order they came: boxes
// are applied in parallel, and their lines interleave differently from run
// to run. "bybox FILE".
func byBox(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: bybox FILE")
	}
	steady(ts, false, args)
	lines := strings.SplitAfter(ts.ReadFile(args[0]), "\n")
	box := func(l string) string {
		if m := progressLine.FindStringSubmatch(l); m != nil {
			return m[1]
		}
		return ""
	}
	for i := 0; i < len(lines); {
		j := i
		for j < len(lines) && box(lines[j]) != "" {
			j++
		}
		run := lines[i:j]
		sort.SliceStable(run, func(a, b int) bool { return box(run[a]) < box(run[b]) })
		i = j + 1
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(strings.Join(lines, "")), 0o600))
}

// savedMatches checks that the save --json result on stdout describes the
// archive it names: its size and SHA-256. "saved".
func savedMatches(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: saved")
	}
	var res struct {
		Archive string `json:"archive"`
		Bytes   int64  `json:"archive_bytes"`
		SHA256  string `json:"sha256"`
	}
	ts.Check(json.Unmarshal([]byte(ts.ReadFile("stdout")), &res))
	b, err := os.ReadFile(ts.MkAbs(res.Archive))
	ts.Check(err)
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != res.SHA256 || int64(len(b)) != res.Bytes {
		ts.Fatalf("%s has %d bytes and SHA-256 %x; the result says %d and %s", res.Archive, len(b), sum, res.Bytes, res.SHA256)
	}
}
