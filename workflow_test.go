package boxes

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// actionlint is the linter of GitHub Actions workflows, at a fixed version; it
// runs shellcheck on every run: script when shellcheck is on PATH.
const actionlint = "github.com/rhysd/actionlint/cmd/actionlint@v1.7.12"

// TestPRWorkflowLints checks docs/pr-workflow.yml, the workflow docs/pull-requests.md
// offers for pull requests, with actionlint (and shellcheck through it).
func TestPRWorkflowLints(t *testing.T) {
	if testing.Short() {
		t.Skip("builds actionlint from the Go module proxy")
	}
	const file = "docs/pr-workflow.yml"
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"boxes -f \"$BOXES_FILE\" validate", "diff --markdown \"origin/${BASE_REF}\"", "<!-- boxes-diff -->", "fetch-depth: 0"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("%s does not contain %q", file, want)
		}
	}
	if _, err := exec.LookPath("shellcheck"); err != nil {
		t.Log("shellcheck is not on PATH: actionlint checks the workflow without it")
	}
	cmd := exec.Command("go", "run", actionlint, "-no-color", file)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("actionlint %s: %v\n%s", file, err, out)
	}
}
