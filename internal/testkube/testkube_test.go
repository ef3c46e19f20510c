package testkube

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps what Skip and Fatal were told.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                        {}
func (r *recorder) Skip(args ...any)               { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatalf(format string, _ ...any) { r.failed = format }

func TestConfig(t *testing.T) {
	if os.Geteuid() != 0 {
		r := &recorder{TB: t}
		t.Setenv(EnvKubeconfig, filepath.Join(t.TempDir(), "admin.kubeconfig"))
		if got := Config(r); got != "" || !strings.Contains(r.skipped, "not root") {
			t.Fatalf("not root: Config = %q, skipped %q, want a skip naming root", got, r.skipped)
		}
		return
	}

	r := &recorder{TB: t}
	t.Setenv(EnvKubeconfig, "")
	if got := Config(r); got != "" || !strings.Contains(r.skipped, "make test starts one") {
		t.Errorf("unset: Config = %q, skipped %q, want a skip saying how to start one", got, r.skipped)
	}

	r = &recorder{TB: t}
	missing := filepath.Join(t.TempDir(), "missing.kubeconfig")
	t.Setenv(EnvKubeconfig, missing)
	if got := Config(r); got != "" || r.failed == "" || r.skipped != "" {
		t.Errorf("missing file: Config = %q, failed %q, skipped %q, want a failure", got, r.failed, r.skipped)
	}

	r = &recorder{TB: t}
	present := filepath.Join(t.TempDir(), "admin.kubeconfig")
	if err := os.WriteFile(present, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvKubeconfig, present)
	if got := Config(r); got != present || r.failed != "" || r.skipped != "" {
		t.Errorf("present: Config = %q (failed %q, skipped %q), want %q", got, r.failed, r.skipped, present)
	}
}
