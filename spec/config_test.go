package spec

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestParseResolvesDefaults(t *testing.T) {
	src := `version: 1
defaults:
  cpus: 2
  memory: 4GiB
  env: {TZ: UTC, LANG: C}
  executor: {bind: 127.0.0.1, port: auto}
boxes:
  alpha: {}
  beta:
    state: stopped
    memory: 8g
    env: {TZ: Europe/Berlin}
    executor: {port: 4800}
hosts:
  nexus: {docker: ssh://me@nexus}
`
	cfg, err := Parse("boxes.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Boxes) != 2 || cfg.Boxes[0].Name != "alpha" || cfg.Boxes[1].Name != "beta" {
		t.Fatalf("boxes = %+v", cfg.Boxes)
	}
	a, b := cfg.Boxes[0], cfg.Boxes[1]
	if a.CPUs != 2 || a.Memory != 4<<30 || a.State != Running || a.Executor.Bind != "127.0.0.1" || a.Executor.Port != 0 || a.Env["TZ"] != "UTC" {
		t.Errorf("alpha = %+v", a)
	}
	if b.Memory != 8<<30 || b.State != Stopped || b.Executor.Port != 4800 || b.Executor.Bind != "127.0.0.1" || b.Env["TZ"] != "Europe/Berlin" || b.Env["LANG"] != "C" {
		t.Errorf("beta = %+v", b)
	}
	if cfg.Hosts["nexus"].Docker != "ssh://me@nexus" {
		t.Errorf("hosts = %+v", cfg.Hosts)
	}
}

func TestParseHostForms(t *testing.T) {
	src := `version: 1
hosts:
  a: {docker: ssh://me@nexus}
  b: {docker: ssh://me@nexus:2222/run/user/1000/docker.sock}
  c: {docker: "tcp://10.0.0.5:2376", tls: certs/c}
  d: {docker: "unix:///run/other.sock"}
  e: {context: nexus}
  f: {docker: "tcp://10.0.0.5:2376", tls: /etc/boxes/f}
  k: {kubernetes: {context: prod, namespace: team-a, kubeconfig: kube/config}}
  l: {kubernetes: {context: prod, namespace: team-b}}
`
	cfg, err := Parse("conf/boxes.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Hosts["c"].TLS; got != "conf/certs/c" {
		t.Errorf("relative tls: = %q, want it beside boxes.yaml", got)
	}
	if got := cfg.Hosts["f"].TLS; got != "/etc/boxes/f" {
		t.Errorf("absolute tls: = %q", got)
	}
	if cfg.Hosts["e"].Context != "nexus" || len(cfg.Hosts) != 8 {
		t.Errorf("hosts = %+v", cfg.Hosts)
	}
	if k := cfg.Hosts["k"]; k.Kind() != HostKubernetes || *k.Kubernetes != (Kubernetes{Context: "prod", Namespace: "team-a", Kubeconfig: "conf/kube/config"}) {
		t.Errorf("kubernetes host k = %+v (kind %s), want its kubeconfig beside boxes.yaml", k.Kubernetes, k.Kind())
	}
	if l := cfg.Hosts["l"]; l.Kind() != HostKubernetes || l.Kubernetes.Kubeconfig != "" || l.Docker != "" || l.Context != "" {
		t.Errorf("kubernetes host l = %+v", l)
	}
	if a := cfg.Hosts["a"]; a.Kind() != HostDocker {
		t.Errorf("docker host a is of kind %s", a.Kind())
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, src string
		line, col int
		msg, hint string
	}{
		{"empty", "", 1, 1, "is empty", "boxes init"},
		{"syntax", "version: 1\nboxes:\n  a: b: c\n", 3, 1, "YAML syntax error", ""},
		{"not a mapping", "- a\n", 1, 1, "top level must be a mapping", ""},
		{"unknown top key", "version: 1\nboxs: {}\n", 2, 1, `unknown key "boxs"`, `did you mean "boxes"?`},
		{"unknown box key", "version: 1\nboxes:\n  alpha:\n    memroy: 4GiB\n", 4, 5, `unknown key "memroy"`, `did you mean "memory"?`},
		{"duplicate key", "version: 1\nboxes:\n  alpha: {}\n  alpha: {}\n", 4, 3, `duplicate key "alpha" (first at line 3)`, ""},
		{"missing version", "boxes: {}\n", 1, 1, "missing version", "version: 1"},
		{"unsupported version", "version: 2\n", 1, 10, "unsupported version 2", ""},
		{"version type", "version: one\n", 1, 10, "expected a whole number", ""},
		{"bad name", "version: 1\nboxes:\n  Alpha: {}\n", 3, 3, `bad box name "Alpha"`, "DNS label"},
		{"long name", "version: 1\nboxes:\n  " + strings.Repeat("a", 32) + ": {}\n", 3, 3, "bad box name", ""},
		{"bad size", "version: 1\nboxes:\n  a: {memory: 4 gigs}\n", 3, 15, "bad size", "4GiB"},
		{"cpus zero", "version: 1\nboxes:\n  a: {cpus: 0}\n", 3, 13, "cpus must be a positive number", ""},
		{"cpus type", "version: 1\nboxes:\n  a: {cpus: lots}\n", 3, 13, "cpus must be a positive number", ""},
		// Numbers the engine or the kernel refuses, or that no machine has.
		{"cpus too many", "version: 1\nboxes:\n  a: {cpus: 100000}\n", 3, 13, "cpus must be a positive number from 0.01 to 8192, not 100000", "host's CPUs"},
		{"cpus 1e308", "version: 1\nboxes:\n  a: {cpus: 1e308}\n", 3, 13, "cpus must be a positive number from 0.01 to 8192, not 1e308", ""},
		{"cpus beyond float64", "version: 1\nboxes:\n  a: {cpus: 1e309}\n", 3, 13, "cpus must be a positive number from 0.01 to 8192, not 1e309", ""},
		{"cpus infinite", "version: 1\nboxes:\n  a: {cpus: .inf}\n", 3, 13, "not .inf", ""},
		{"cpus NaN", "version: 1\nboxes:\n  a: {cpus: .nan}\n", 3, 13, "not .nan", ""},
		{"cpus negative infinite", "version: 1\nboxes:\n  a: {cpus: -.inf}\n", 3, 13, "not -.inf", ""},
		{"cpus too few", "version: 1\nboxes:\n  a: {cpus: 0.005}\n", 3, 13, "from 0.01 to 8192, not 0.005", ""},
		{"cpus in defaults", "version: 1\ndefaults:\n  cpus: 1e308\nboxes:\n  a: {}\n", 3, 9, "from 0.01 to 8192", ""},
		{"cpus quoted", "version: 1\nboxes:\n  a: {cpus: \"2\"}\n", 3, 13, "cpus must be a positive number, found \"2\"", ""},
		{"memory below Docker's minimum", "version: 1\nboxes:\n  a: {memory: 1}\n", 3, 15, "memory 1 is less than 6 MiB, the least Docker accepts", "4GiB"},
		{"memory of half a byte", "version: 1\nboxes:\n  a: {memory: 0.5}\n", 3, 15, "memory 0.5 is less than 6 MiB", ""},
		{"memory 5MiB", "version: 1\nboxes:\n  a: {memory: 5MiB}\n", 3, 15, "less than 6 MiB", ""},
		{"memory over any machine", "version: 1\nboxes:\n  a: {memory: 5000TiB}\n", 3, 15, "memory 5000TiB is more than 4 PiB, more than any machine can address", ""},
		{"memory zero", "version: 1\nboxes:\n  a: {memory: 0}\n", 3, 15, "bad size", ""},
		{"bad state", "version: 1\nboxes:\n  a: {state: paused}\n", 3, 14, `bad state "paused"`, "running or stopped"},
		{"port range", "version: 1\nboxes:\n  a: {executor: {port: 70000}}\n", 3, 24, "out of range", ""},
		{"port zero", "version: 1\nboxes:\n  a: {executor: {port: 0}}\n", 3, 24, "out of range", ""},
		{"port type", "version: 1\nboxes:\n  a: {executor: {port: high}}\n", 3, 24, "port must be a number or auto", ""},
		{"bind", "version: 1\nboxes:\n  a: {executor: {bind: localhost}}\n", 3, 24, "bind must be an IP address", ""},
		{"recipient", "version: 1\narchive:\n  recipients: [age1nope]\n", 3, 16, `"age1nope" is not an age recipient (age1…)`, "age-keygen -y"},
		{"port clash", "version: 1\nboxes:\n  a: {executor: {port: 4800}}\n  b: {executor: {port: 4800}}\n", 4, 24, "already uses", "another port"},
		{"port clash in blocks", "version: 1\nboxes:\n  a:\n    executor:\n      port: 4800\n  b:\n    memory: 1GiB\n    executor:\n      port: 4800\n", 9, 13, "box b publishes executor port 4800 on 127.0.0.1, which box a (line 3) already uses", ""},
		{"port clash from defaults", "version: 1\ndefaults:\n  executor: {port: 4800}\nboxes:\n  a: {}\n  b: {}\n", 3, 20, "box b publishes executor port 4800", ""},
		{"non-UTF-8", "version: 1\nboxes:\n  a: {env: {X: \"h\u00e9\xffllo\"}}\n", 3, 19, "byte 0xff is not UTF-8", "UTF-8"},
		{"non-UTF-8 first line", "\xfe", 1, 1, "byte 0xfe is not UTF-8", ""},
		{"env value too long", "version: 1\nboxes:\n  a:\n    env:\n      TZ: UTC\n      BIG: " + strings.Repeat("x", 128<<10) + "\n", 6, 12, "env BIG is 128.0 KiB; Linux cannot start a process with a variable over 128 KiB", "file"},
		{"env total too big", "version: 1\nboxes:\n  a:\n    env:\n" + bigEnv(9, 120<<10) + "", 4, 5, "env: totals", ""},
		{"wildcard clash", "version: 1\nboxes:\n  a: {executor: {port: 4800}}\n  b: {executor: {port: 4800, bind: 0.0.0.0}}\n", 4, 24, "already uses", ""},
		{"undefined host", "version: 1\nboxes:\n  a: {host: nexus}\n", 3, 13, `host "nexus" is not defined`, "hosts:"},
		{"env not scalar", "version: 1\nboxes:\n  a: {env: {X: [1]}}\n", 3, 16, "env X must be a scalar", ""},
		{"env name", "version: 1\nboxes:\n  a: {env: {1X: y}}\n", 3, 13, "bad environment variable name", ""},
		{"wrong type", "version: 1\nboxes: [a]\n", 2, 8, "expected a mapping of box names", ""},
		{"host without engine", "version: 1\nhosts:\n  nexus: {}\n", 3, 3, "exactly one of docker:, context: or kubernetes:", ""},
		{"kubernetes and docker", "version: 1\nhosts:\n  k8s: {docker: ssh://me@nexus, kubernetes: {context: prod, namespace: boxes}}\n", 3, 33, "kubernetes: goes without docker:, context: and tls:", "never both"},
		{"kubernetes no namespace", "version: 1\nhosts:\n  k8s: {kubernetes: {context: prod}}\n", 3, 9, "kubernetes: needs context: and namespace:", "kubectl config get-contexts"},
		{"kubernetes no context", "version: 1\nhosts:\n  k8s: {kubernetes: {namespace: boxes}}\n", 3, 9, "kubernetes: needs context: and namespace:", ""},
		{"kubernetes bad namespace", "version: 1\nhosts:\n  k8s: {kubernetes: {context: prod, namespace: Team_A}}\n", 3, 48, `bad namespace "Team_A"`, "lowercase"},
		{"kubernetes unknown key", "version: 1\nhosts:\n  k8s: {kubernetes: {context: prod, namespace: boxes, cluster: x}}\n", 3, 55, `unknown key "cluster"`, ""},
		{"kubernetes not a mapping", "version: 1\nhosts:\n  k8s: {kubernetes: prod}\n", 3, 21, "a mapping with context: and namespace:", ""},
		{"docker no scheme", "version: 1\nhosts:\n  nexus: {docker: nexus:2376}\n", 3, 19, "not an engine address", "ssh://user@host"},
		{"docker http", "version: 1\nhosts:\n  nexus: {docker: http://nexus}\n", 3, 19, "cannot reach an engine over http://", ""},
		{"ssh no host", "version: 1\nhosts:\n  nexus: {docker: ssh:///run/d.sock}\n", 3, 19, "names no host", ""},
		{"ssh password", "version: 1\nhosts:\n  nexus: {docker: ssh://me:pw@nexus}\n", 3, 19, "holds a password", "ssh key"},
		{"tcp without tls", "version: 1\nhosts:\n  nexus: {docker: tcp://nexus:2376}\n", 3, 19, "needs tls:", "ca.pem"},
		{"tcp path", "version: 1\nhosts:\n  nexus: {docker: tcp://nexus:2376/x, tls: certs}\n", 3, 19, "has a path", ""},
		{"unix relative", "version: 1\nhosts:\n  nexus: {docker: unix://run/d.sock}\n", 3, 19, "not an absolute socket path", "three slashes"},
		{"tls without tcp", "version: 1\nhosts:\n  nexus: {docker: ssh://me@nexus, tls: certs}\n", 3, 40, "tls: goes with docker: tcp://", ""},
		{"tls with context", "version: 1\nhosts:\n  nexus: {context: nexus, tls: certs}\n", 3, 32, "tls: goes with docker: tcp://", ""},
		// yaml.v3 gives no position for a character it refuses, and the
		// line of a parser error counted from 0: each at its place.
		{"NUL byte", "version: 1\nboxes:\n  a: {}\n  b: {}\n  c: {}\n  d: {env: {X: y\x00}}\n", 6, 17, "character U+0000 is not allowed in YAML", "UTF-16"},
		{"NUL byte after a multi-byte character", "version: 1\nfleet: t\u00e9am\x00\n", 2, 12, "character U+0000", ""},
		{"escape character", "version: 1\r\nboxes:\r\n  a: {env: {X: \"\x1b[0m\"}}\r\n", 3, 17, "character U+001B", ""},
		{"C1 control character", "version: 1\nboxes: {}\u0085fleet: \u009b\n", 3, 8, "character U+009B", ""},
		{"unclosed brace", "version: 1\nfleet: x\nboxes:\n  b: {cpus: 1\n", 4, 6, "YAML syntax error: did not find expected ',' or '}'", ""},
		{"unclosed brace before more", "version: 1\nboxes:\n  a: {}\n  b: {cpus: 1\n  c: {}\n", 4, 6, "did not find expected ',' or '}'", ""},
		{"unclosed brace on line 1", "{version: 1\n", 1, 1, "did not find expected ',' or '}'", ""},
		{"unclosed inner brace on line 1", "{version: 1, boxes: {a: {}, b: {cpus: 2}\n", 1, 21, "did not find expected ',' or '}'", ""},
		{"unclosed bracket", "version: 1\narchive:\n  recipients: [age1x, {a: 1}\n", 3, 15, "did not find expected ',' or ']'", ""},
		{"bracket closed by a brace", "version: 1\nboxes:\n  a: {env: [1, 2}\n", 3, 12, "did not find expected ',' or ']'", ""},
		{"brace in a quoted value", "version: 1\nboxes:\n  a: {env: {X: \"{[\", Y: '}'}\n", 3, 6, "did not find expected ',' or '}'", ""},
		{"bad indentation", "version: 1\nboxes:\n  a: {}\n b: {}\n", 4, 1, "did not find expected key", ""},
		{"block sequence", "version: 1\narchive:\n  recipients:\n    - age1x\n    b: 1\n", 4, 1, "did not find expected '-' indicator", ""},
		{"unclosed quote", "version: 1\nboxes:\n  a: {env: {X: \"abc}}\n", 3, 16, "found unexpected end of stream", ""},
		{"unknown alias", "version: 1\nboxes:\n  a: {env: {X: '*nope'}}\n  b: *nope\n", 4, 6, "unknown anchor 'nope' referenced", ""},
		{"YAML 1.2 directive", "version: 1\n%YAML 1.2\n---\nboxes: {}\n", 2, 1, "incompatible YAML document", ""},
		// A second document would be dropped: it is refused where it starts.
		{"second document", "version: 1\nboxes:\n  a: {}\n---\nboxes:\n  b: {}\n", 4, 1, "a second YAML document", "one document"},
		{"second document after an empty one", "version: 1\n---\n# nothing\n---\nfleet: x\n", 4, 1, "a second YAML document", ""},
		{"document after end marker", "version: 1\n...\nboxes: {}\n", 3, 1, "a second YAML document", ""},
		{"broken second document", "version: 1\n---\nboxes: {a: [}\n", 3, 1, "did not find expected node content", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { firstError(t, tc.src, tc.line, tc.col, tc.msg, tc.hint) })
	}
}

// firstError checks that src is refused, its first error at line:col with
// a message holding msg and a hint holding hint, and returns the errors.
func firstError(t *testing.T, src string, line, col int, msg, hint string) Errors {
	t.Helper()
	cfg, err := Parse("boxes.yaml", []byte(src))
	if cfg != nil {
		t.Errorf("got a config despite errors")
	}
	var errs Errors
	if !errors.As(err, &errs) || len(errs) == 0 {
		t.Fatalf("err = %v, want Errors", err)
	}
	e := errs[0]
	if e.Line != line || e.Col != col || !strings.Contains(e.Msg, msg) || !strings.Contains(e.Hint, hint) {
		t.Errorf("got %d:%d %q hint %q; want %d:%d %q hint %q", e.Line, e.Col, e.Msg, e.Hint, line, col, msg, hint)
	}
	if !strings.HasPrefix(e.Error(), "boxes.yaml:") {
		t.Errorf("error %q does not start with the file name", e.Error())
	}
	return errs
}

func TestParseReportsEveryError(t *testing.T) {
	src := "version: 1\nboxes:\n  a: {cpus: -1}\n  B: {}\n  c: {state: up}\n"
	_, err := Parse("boxes.yaml", []byte(src))
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 3 {
		t.Fatalf("want 3 errors, got %v", err)
	}
	if errs[0].Line != 3 || errs[1].Line != 4 || errs[2].Line != 5 {
		t.Errorf("errors out of order: %v", errs)
	}
}

func TestParseAcceptsTheBounds(t *testing.T) {
	src := "version: 1\ndefaults:\n  cpus: 0.01\n  memory: 6MiB\nboxes:\n  a: {}\n  b:\n    cpus: 8192\n    memory: 4096TiB\n"
	cfg, err := Parse("boxes.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	a, b := cfg.Boxes[0], cfg.Boxes[1]
	if a.CPUs != 0.01 || a.Memory != 6<<20 || b.CPUs != 8192 || b.Memory != 1<<52 {
		t.Errorf("a = %v cpus %d bytes, b = %v cpus %d bytes", a.CPUs, a.Memory, b.CPUs, b.Memory)
	}
	// Where each value is written, for the plan's messages: a box's own,
	// else the defaults' it inherits.
	if a.CPUsAt.String() != "boxes.yaml:3:9" || a.MemoryAt.String() != "boxes.yaml:4:11" ||
		b.CPUsAt.String() != "boxes.yaml:8:11" || b.MemoryAt.String() != "boxes.yaml:9:13" {
		t.Errorf("positions: a %s %s, b %s %s", a.CPUsAt, a.MemoryAt, b.CPUsAt, b.MemoryAt)
	}
	cfg, err = Parse("boxes.yaml", []byte("version: 1\nboxes:\n  a: {cpus: 0x10}\n"))
	if err != nil || cfg.Boxes[0].CPUs != 16 || cfg.Boxes[0].MemoryAt != (Pos{}) {
		t.Errorf("cpus: 0x10 (a YAML integer) = %+v, %v", cfg, err)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"4GiB": 4 << 30, "512MiB": 512 << 20, "8g": 8 << 30, "1.5GiB": 3 << 29, "2GB": 2e9, "1024": 1024} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "GiB", "-1g", "4 parsecs", "0"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
}

// bigEnv is n env lines of size bytes each, under a box's env: key.
func bigEnv(n, size int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "      V%d: %s\n", i, strings.Repeat("x", size))
	}
	return b.String()
}

func TestHintsDoNotRepeatPositions(t *testing.T) {
	_, err := Parse("boxes.yaml", []byte("version: 1\nboxes:\n  a: {memory: lots}\n  b: {memory: more}\n"))
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatal(err)
	}
	hints := errs.HintLines()
	if len(hints) != 1 || strings.Contains(hints[0], "boxes.yaml") || strings.Contains(hints[0], ":3:") {
		t.Errorf("hints = %q, want one hint without a position", hints)
	}
}

// A plan that finds a box's runtime missing on its host points at where
// runtime: is written: the box's own, else the defaults' it inherits.
func TestParseRuntimePosition(t *testing.T) {
	src := "version: 1\ndefaults:\n  runtime: runsc\nboxes:\n  a: {}\n  b:\n    runtime: kata\n  c: {cpus: 1}\n"
	cfg, err := Parse("boxes.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct{ runtime, at string }{{"runsc", "boxes.yaml:3:12"}, {"kata", "boxes.yaml:7:14"}, {"runsc", "boxes.yaml:3:12"}} {
		if b := cfg.Boxes[i]; b.Runtime != want.runtime || b.RuntimeAt.String() != want.at {
			t.Errorf("box %s: runtime %q at %q, want %q at %q", b.Name, b.Runtime, b.RuntimeAt, want.runtime, want.at)
		}
	}
	cfg, err = Parse("boxes.yaml", []byte("version: 1\nboxes:\n  a: {}\n"))
	if err != nil || cfg.Boxes[0].RuntimeAt != (Pos{}) {
		t.Errorf("no runtime: written: %+v, %v", cfg.Boxes[0].RuntimeAt, err)
	}
}
