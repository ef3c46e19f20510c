package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/workspace"
)

const composeTestImage = "sha256:3333333333333333333333333333333333333333333333333333333333333333"

// composeDir writes boxes.yaml, and boxes.lock when lock is not "", into a
// temporary directory, with a secret beside them that must never be printed.
func composeDir(t *testing.T, lock string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"boxes.yaml":               "version: 1\nfleet: team-a\ndefaults:\n  cpus: 2\n  memory: 4GiB\nboxes:\n  alpha: {}\n  beta:\n    env: {TZ: Europe/Berlin}\n    executor: {bind: 0.0.0.0, port: 4800}\n",
		".boxes/secrets/alpha.env": "EXECUTOR_TOKEN=do-not-print-me\n",
	}
	if lock != "" {
		files["boxes.lock"] = lock
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runCompose(t *testing.T, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Main(Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}, append([]string{"-f", filepath.Join(dir, "boxes.yaml"), "compose"}, args...))
	return code, out.String(), errOut.String()
}

func TestComposePrintsTheProject(t *testing.T) {
	dir := composeDir(t, "version: 1\npins: {}\nimage:\n  id: "+composeTestImage+"\n")
	code, out, errOut := runCompose(t, dir, "beta")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{
		"name: hbl-beta\n",
		"image: " + composeTestImage + "\n",
		"EXECUTOR_TOKEN: <redacted>\n",
		"TZ: Europe/Berlin\n",
		"host_ip: 0.0.0.0\n",
		`published: "4800"`,
		"name: hbl-beta_agent-data\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "do-not-print-me") {
		t.Error("the output carries a token from .boxes/secrets")
	}
}

func TestComposeWithoutImage(t *testing.T) {
	for name, lock := range map[string]string{
		"no lock":          "",
		"no image in lock": "version: 1\npins: {}\n",
	} {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runCompose(t, composeDir(t, lock), "alpha")
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			if !strings.HasPrefix(errOut, "boxes: warning: ") || !strings.Contains(errOut, "run boxes build") {
				t.Errorf("stderr %q, want a warning naming boxes build", errOut)
			}
			if !strings.Contains(out, "image: '"+workspace.NoImage+"'") {
				t.Errorf("output lacks the placeholder image:\n%s", out)
			}
		})
	}
}

func TestComposeMisuse(t *testing.T) {
	dir := composeDir(t, "")
	for _, c := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"unknown box", []string{"zeta"}, "boxes: error: no box \"zeta\" in " + filepath.Join(dir, "boxes.yaml") + "\nboxes: hint: declared boxes: alpha, beta\n"},
		{"no name", nil, "boxes: error: compose needs exactly one box name\n"},
		{"no boxes.yaml", []string{"-f", filepath.Join(dir, "missing.yaml"), "alpha"}, "boxes: hint: run boxes init"},
		{"two names", []string{"alpha", "beta"}, "boxes: error: compose needs exactly one box name\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCompose(t, dir, c.args...)
			if code != 1 || out != "" || !strings.Contains(errOut, c.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing, %q", code, out, errOut, c.stderr)
			}
		})
	}
}
