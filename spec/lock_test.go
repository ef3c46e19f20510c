package spec

import (
	"strings"
	"testing"
	"time"
)

var (
	hex64 = strings.Repeat("ab", 32)
	sri   = "sha512-" + strings.Repeat("A", 86) + "=="
)

func goodLock() string {
	return `version: 1
pins:
  base:
    image: ubuntu:24.04
    digest: sha256:` + hex64 + `
  node:
    version: 22.21.1
    integrity: sha256:` + hex64 + `
  claude:
    package: "@anthropic-ai/claude-code"
    version: 2.0.32
    integrity: ` + sri + `
  hermes:
    package: NousResearch/hermes-agent
    version: 4f2c9e1a7b3d5c8e0f1a2b3c4d5e6f708192a3b4
image:
  id: sha256:` + hex64 + `
  ref: hermes-box-lite:test
  inputs: sha256:` + hex64 + `
  built: "2026-12-02T10:15:00Z"
  tools:
    claude: "2.0.32"
`
}

func TestLockRoundTrip(t *testing.T) {
	l, err := ParseLock("boxes.lock", []byte(goodLock()))
	if err != nil {
		t.Fatal(err)
	}
	if l.Pins.Claude.Package != "@anthropic-ai/claude-code" || l.Pins.Node.Version != "22.21.1" || l.Image.Tools["claude"] != "2.0.32" ||
		!l.Image.Built.Equal(time.Date(2026, 12, 2, 10, 15, 0, 0, time.UTC)) {
		t.Errorf("parsed %+v %+v", l.Pins, l.Image)
	}
	out, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), "# boxes.lock: written by boxes build") {
		t.Errorf("no header:\n%s", out)
	}
	again, err := ParseLock("boxes.lock", out)
	if err != nil {
		t.Fatal(err)
	}
	out2, _ := again.Marshal()
	if string(out2) != string(out) {
		t.Errorf("marshal is not stable:\n%s\n---\n%s", out, out2)
	}
	// Key order is the file's, whatever the order read.
	if i, j := strings.Index(string(out), "  node:"), strings.Index(string(out), "  claude:"); i < 0 || j < i {
		t.Errorf("pins out of order:\n%s", out)
	}
}

func TestLockErrors(t *testing.T) {
	for name, tc := range map[string]struct{ from, to, want string }{
		"unknown pin":           {"  node:\n", "  nodejs:\n", `boxes.lock:6:3: unknown key "nodejs"`},
		"bad base digest":       {"digest: sha256:" + hex64, "digest: sha256:abc", `boxes.lock:5:13: pins.base.digest "sha256:abc" is not sha256:<64 hex digits>`},
		"empty base image":      {"image: ubuntu:24.04", `image: ""`, "boxes.lock:4:12: pins.base.image is empty"},
		"empty version":         {"version: 22.21.1", `version: ""`, "boxes.lock:7:14: pins.node.version is empty"},
		"range, not a version":  {"version: 2.0.32", "version: ^2.0.0", `boxes.lock:11:14: pins.claude.version "^2.0.0" is not an exact version like 1.2.3`},
		"node integrity as hex": {"integrity: sha256:" + hex64, "integrity: " + hex64, "boxes.lock:8:16: pins.node.integrity \"" + hex64 + "\" is not sha256:<64 hex digits>"},
		"npm sha1":              {"integrity: " + sri, "integrity: sha1-abc=", `boxes.lock:12:16: pins.claude.integrity "sha1-abc=" is not npm's sha512-<base64> integrity`},
		"npm package":           {`package: "@anthropic-ai/claude-code"`, `package: "Claude Code"`, `boxes.lock:10:14: pins.claude.package "Claude Code" is not an npm package name`},
		"hermes ref":            {"version: 4f2c9e1a7b3d5c8e0f1a2b3c4d5e6f708192a3b4", `version: "-rf"`, `boxes.lock:15:14: pins.hermes.version "-rf" is not a git commit, tag or branch`},
		"image id":              {"  id: sha256:" + hex64, "  id: abc", `boxes.lock:17:7: image.id "abc" is not sha256:<64 hex digits>`},
		"built time":            {`built: "2026-12-02T10:15:00Z"`, "built: yesterday", `boxes.lock:20:10: image.built "yesterday" is not an RFC 3339 time`},
		"version":               {"version: 1\npins", "version: 2\npins", "boxes.lock:1:10: unsupported lock version 2"},
		"non-UTF-8":             {"version: 22.21.1", "version: 22.\xff", "boxes.lock:7:17: byte 0xff is not UTF-8"},
		"duplicate key":         {"  hermes:\n", "  node:\n    version: 1.0.0\n  hermes:\n", `duplicate key "node"`},
		"second document":       {"    claude: \"2.0.32\"\n", "    claude: \"2.0.32\"\n---\nversion: 2\n", "boxes.lock:23:1: a second YAML document starts here; boxes.lock is one document"},
		"NUL":                   {"version: 22.21.1", "version: 22.\x00", "boxes.lock:7:17: character U+0000 is not allowed in YAML"},
		"unclosed list":         {"    claude: \"2.0.32\"\n", "    claude: [\"2.0.32\"\n", "boxes.lock:22:13: YAML syntax error: did not find expected ',' or ']'"},
	} {
		data := strings.Replace(goodLock(), tc.from, tc.to, 1)
		if data == goodLock() {
			t.Fatalf("%s: the replacement did not apply", name)
		}
		_, err := ParseLock("boxes.lock", []byte(data))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v\nwant %q", name, err, tc.want)
		}
	}
	if _, err := ParseLock("boxes.lock", nil); err == nil || !strings.Contains(err.Error(), "boxes.lock is empty") {
		t.Errorf("empty lock: %v", err)
	}
}
