package statedir

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSecretsExposedAndRestricted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "boxes.yaml")
	tokens := Beside(dir).Tokens()
	if got, err := tokens.Exposed(); err != nil || len(got) != 0 {
		t.Fatalf("no secrets yet: %v %v", got, err)
	}
	for _, n := range []string{"alpha", "beta"} {
		if err := tokens.Put(n, "t-"+n); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := tokens.Exposed(); err != nil || len(got) != 0 {
		t.Fatalf("fresh store exposed: %v %v", got, err)
	}
	// What a careless chmod -R or a restore from a backup does.
	if err := os.Chmod(tokens.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(tokens.Dir, "beta.env"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := tokens.Exposed()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		tokens.Dir + " is 0755, want 0700",
		filepath.Join(tokens.Dir, "beta.env") + " is 0644, want 0600",
	}
	if len(got) != len(want) {
		t.Fatalf("exposed %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("exposure %d: %q, want %q", i, got[i], want[i])
		}
	}
	fixed, err := tokens.Restrict()
	if err != nil || len(fixed) != 2 {
		t.Fatalf("Restrict: %v %v", fixed, err)
	}
	for path, mode := range map[string]os.FileMode{tokens.Dir: 0o700, filepath.Join(tokens.Dir, "beta.env"): 0o600, filepath.Join(tokens.Dir, "alpha.env"): 0o600} {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v %v, want %04o", path, fi.Mode().Perm(), err, mode)
		}
	}
	if got, _ := tokens.Exposed(); len(got) != 0 {
		t.Errorf("still exposed after Restrict: %v", got)
	}
}
