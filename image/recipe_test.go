package image

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/spec"
)

func TestRecipeHoldsTheBuildContext(t *testing.T) {
	for _, name := range []string{
		"Dockerfile",
		"provision/provision.sh",
		"provision/lib.sh",
		"guest/hb",
		"guest/profile.sh",
		"guest/tmux.conf",
	} {
		info, err := fs.Stat(Recipe, name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !info.Mode().IsRegular() || info.Size() == 0 {
			t.Errorf("%s: mode %v, size %d", name, info.Mode(), info.Size())
		}
	}
}

// Every COPY source of the Dockerfile must be in the embedded context (or be
// the gate, which boxes build adds), or a build from an installed binary
// fails where one from the tree works.
func TestRecipeHasEveryCopySource(t *testing.T) {
	dockerfile, err := fs.ReadFile(Recipe, "Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	copies := regexp.MustCompile(`(?m)^COPY\s+(.+)$`).FindAllStringSubmatch(string(dockerfile), -1)
	if len(copies) == 0 {
		t.Fatal("the Dockerfile has no COPY")
	}
	for _, c := range copies {
		fields := strings.Fields(c[1])
		for _, src := range fields[:len(fields)-1] {
			if strings.HasPrefix(src, "--") || src == GateFile {
				continue
			}
			if _, err := fs.Stat(Recipe, strings.TrimSuffix(src, "/")); err != nil {
				t.Errorf("COPY %s: %v", src, err)
			}
		}
	}
}

// embed drops the exec bit: the Dockerfile runs provision.sh through bash,
// and hb is executable in the image because it starts with #!, which boxes
// build writes 0755 (docker.BuildContext).
func TestRecipeDoesNotNeedExecBits(t *testing.T) {
	err := fs.WalkDir(Recipe, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode()&0o111 != 0 {
			t.Errorf("%s: embedded with exec bits %v; the checks below assume none", path, info.Mode())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dockerfile, _ := fs.ReadFile(Recipe, Dockerfile)
	if !strings.Contains(string(dockerfile), "RUN bash /opt/hermes-box/provision/provision.sh") {
		t.Error("the Dockerfile does not run provision.sh through bash")
	}
	hb, _ := fs.ReadFile(Recipe, "guest/hb")
	if !strings.HasPrefix(string(hb), "#!") {
		t.Error("guest/hb does not start with #!, so boxes build would not make it executable")
	}
	provision, _ := fs.ReadFile(Recipe, "provision/provision.sh")
	if regexp.MustCompile(`(?m)^\s*"?\$here/lib\.sh`).Match(provision) {
		t.Error("provision.sh executes lib.sh in place; source it")
	}
	if !strings.Contains(string(provision), `ln -sfn "$PREFIX/guest/hb" /usr/local/bin/hb`) {
		t.Error("provision.sh does not link /usr/local/bin/hb to the guest layer")
	}
}

func fullPins() spec.Pins {
	return spec.Pins{
		Base:     spec.BasePin{Image: "ubuntu:24.04", Digest: "sha256:" + strings.Repeat("a", 64)},
		Node:     spec.ToolPin{Version: "22.11.0", Integrity: "sha256:" + strings.Repeat("b", 64)},
		UV:       spec.ToolPin{Version: "0.5.4", Integrity: "sha256:" + strings.Repeat("c", 64)},
		Claude:   spec.ToolPin{Package: "@anthropic-ai/claude-code", Version: "1.0.0", Integrity: "sha512-Y2xhdWRl"},
		Codex:    spec.ToolPin{Package: "@openai/codex", Version: "0.1.0", Integrity: "sha512-Y29kZXg="},
		Executor: spec.ToolPin{Package: "executor", Version: "2.0.0", Integrity: "sha512-ZXhlYw=="},
		Hermes:   spec.ToolPin{Package: "NousResearch/hermes-agent", Version: strings.Repeat("d", 40)},
	}
}

func TestBuildArgsFromPins(t *testing.T) {
	args, err := BuildArgs(fullPins(), "", false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"BASE_IMAGE":         "ubuntu:24.04@sha256:" + strings.Repeat("a", 64),
		"NODE_VERSION":       "22.11.0",
		"NODE_SHA256":        strings.Repeat("b", 64),
		"UV_VERSION":         "0.5.4",
		"UV_SHA256":          strings.Repeat("c", 64),
		"CLAUDE_VERSION":     "1.0.0",
		"CLAUDE_INTEGRITY":   "sha512-Y2xhdWRl",
		"CODEX_VERSION":      "0.1.0",
		"CODEX_INTEGRITY":    "sha512-Y29kZXg=",
		"EXECUTOR_VERSION":   "2.0.0",
		"EXECUTOR_INTEGRITY": "sha512-ZXhlYw==",
		"HERMES_REF":         strings.Repeat("d", 40),
	}
	if len(args) != len(want) {
		t.Errorf("args %v\nwant %v", args, want)
	}
	for k, v := range want {
		if args[k] != v {
			t.Errorf("%s = %q, want %q", k, args[k], v)
		}
	}

	// Every argument is one the Dockerfile declares: a misspelt one would be ignored.
	dockerfile, _ := fs.ReadFile(Recipe, Dockerfile)
	for k := range args {
		if !regexp.MustCompile(`(?m)(^ARG |^\s+)` + k + `=`).Match(dockerfile) {
			t.Errorf("the Dockerfile declares no ARG %s", k)
		}
	}
	offline, err := BuildArgs(spec.Pins{}, "local/base", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range installs {
		if offline["INSTALL_"+name] != "0" || !regexp.MustCompile(`(?m)(^ARG |^\s+)INSTALL_`+name+`=1`).Match(dockerfile) {
			t.Errorf("offline INSTALL_%s = %q, or the Dockerfile lacks it", name, offline["INSTALL_"+name])
		}
	}
}

func TestBuildArgsBase(t *testing.T) {
	p := fullPins()
	for name, tc := range map[string]struct {
		pin      spec.BasePin
		override string
		offline  bool
		want     string
	}{
		"tag and digest":              {p.Base, "", false, "ubuntu:24.04@sha256:" + strings.Repeat("a", 64)},
		"reference with digest":       {spec.BasePin{Image: "ubuntu@sha256:" + strings.Repeat("e", 64), Digest: "sha256:" + strings.Repeat("e", 64)}, "", false, "ubuntu@sha256:" + strings.Repeat("e", 64)},
		"--base wins":                 {p.Base, "mirror.local/ubuntu:24.04", false, "mirror.local/ubuntu:24.04"},
		"offline takes a bare tag":    {spec.BasePin{Image: "debian:bookworm"}, "", true, "debian:bookworm"},
		"offline --base, no base pin": {spec.BasePin{}, "local/base", true, "local/base"},
	} {
		p.Base = tc.pin
		args, err := BuildArgs(p, tc.override, tc.offline)
		if err != nil || args["BASE_IMAGE"] != tc.want {
			t.Errorf("%s: BASE_IMAGE %q, error %v; want %q", name, args["BASE_IMAGE"], err, tc.want)
		}
	}
}

func TestBuildArgsNameEveryMissingPin(t *testing.T) {
	for name, tc := range map[string]struct {
		pins    spec.Pins
		offline bool
		want    string
	}{
		"empty lock": {spec.Pins{}, false, "boxes.lock lacks what the build needs: pins.base (image and digest), pins.node.version, pins.node.integrity, " +
			"pins.claude.version, pins.claude.integrity, pins.codex.version, pins.codex.integrity, " +
			"pins.executor.version, pins.executor.integrity, pins.hermes.version, pins.uv.version, pins.uv.integrity"},
		"base without digest": {func() spec.Pins { p := fullPins(); p.Base.Digest = ""; return p }(), false, "lacks what the build needs: pins.base (image and digest)"},
		"one integrity":       {func() spec.Pins { p := fullPins(); p.Codex.Integrity = ""; return p }(), false, "needs: pins.codex.integrity"},
		"offline, no base":    {spec.Pins{}, true, "needs: pins.base (image and digest)"},
	} {
		_, err := BuildArgs(tc.pins, "", tc.offline)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		}
	}
}
