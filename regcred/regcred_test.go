package regcred

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFor(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	auth := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	cfg := `{"auths": {"reg.example:5000": {"auth": "` + auth("alice:pw") + `"}, "https://index.docker.io/v1/": {"auth": "` + auth("hub:pw") + `"}}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ref, registry, key, user string
	}{
		{"reg.example:5000/hbl@sha256:" + strings.Repeat("ab", 32), "reg.example:5000", "reg.example:5000", "alice"},
		{"hermes/box:1", "docker.io", "https://index.docker.io/v1/", "hub"},
		{"other.example/x", "other.example", "other.example", ""},
	} {
		c, err := For(tc.ref)
		if err != nil || c.Registry != tc.registry || c.Key != tc.key || c.Auth.Username != tc.user || c.Empty() != (tc.user == "") {
			t.Errorf("For(%s) = %+v, %v", tc.ref, c, err)
		}
	}
	if _, err := For("Not A Reference"); err == nil || !strings.Contains(err.Error(), "is not an image reference") {
		t.Errorf("a bad reference: %v", err)
	}
	// A configuration that cannot be read is said, not taken for none.
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := For("reg.example:5000/hbl"); err == nil || !strings.Contains(err.Error(), "reading the docker configuration for reg.example:5000") {
		t.Errorf("a broken configuration: %v", err)
	}
}
