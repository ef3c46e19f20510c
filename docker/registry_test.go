package docker

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	registrytypes "github.com/docker/docker/api/types/registry"
)

// TestRegistryCredentials: the credentials sent with a pull are the docker
// CLI's for the reference's registry: auths (Docker Hub's under its
// historical key), a credential helper, and nothing for a registry the
// configuration does not know.
func TestRegistryCredentials(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	// A credential helper as the docker CLI runs it: "get", the server on stdin.
	bin := t.TempDir()
	helper := "#!/bin/sh\nread server\n[ \"$server\" = helped.example:5000 ] || { echo 'credentials not found in native keychain'; exit 1; }\n" +
		"echo '{\"ServerURL\":\"helped.example:5000\",\"Username\":\"carol\",\"Secret\":\"from-helper\"}'\n"
	if err := os.WriteFile(filepath.Join(bin, "docker-credential-boxestest"), []byte(helper), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cfg := `{
  "auths": {
    "127.0.0.1:5000": {"auth": "YWxpY2U6czNjcmV0"},
    "https://index.docker.io/v1/": {"auth": "Ym9iOmh1Yg=="}
  },
  "credHelpers": {"helped.example:5000": "boxestest"}
}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	digest := "@sha256:" + strings.Repeat("a", 64)
	cases := []struct {
		ref, registry, user, password string
	}{
		{"127.0.0.1:5000/hbl" + digest, "127.0.0.1:5000", "alice", "s3cret"},
		{"hermes/box" + digest, "docker.io", "bob", "hub"},
		{"docker.io/hermes/box:1", "docker.io", "bob", "hub"},
		{"helped.example:5000/team/hbl" + digest, "helped.example:5000", "carol", "from-helper"},
		{"other.example/hbl" + digest, "other.example", "", ""},
	}
	for _, c := range cases {
		got, err := registryCredentials(c.ref)
		if err != nil {
			t.Errorf("%s: %v", c.ref, err)
			continue
		}
		if got.registry != c.registry || got.user != c.user {
			t.Errorf("%s: registry %q user %q, want %q %q", c.ref, got.registry, got.user, c.registry, c.user)
		}
		if c.user == "" {
			if got.auth != "" {
				t.Errorf("%s: sends credentials %q for a registry the configuration lacks", c.ref, got.auth)
			}
			continue
		}
		a, err := registrytypes.DecodeAuthConfig(got.auth)
		if err != nil || a.Username != c.user || a.Password != c.password {
			t.Errorf("%s: X-Registry-Auth %+v %v, want %s:%s", c.ref, a, err, c.user, c.password)
		}
	}

	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := registryCredentials(cases[0].ref); err == nil || !strings.Contains(err.Error(), "docker configuration") {
		t.Errorf("a broken docker configuration: %v", err)
	}
}

// TestRegistryErrors: the engine's text of a refused or unreachable pull
// becomes an error that names the registry and the host, with the hint
// for it; other failures stay as they were, with the reference and host.
func TestRegistryErrors(t *testing.T) {
	ref := "10.0.0.1:5000/hbl@sha256:" + strings.Repeat("a", 64)
	alice := credentials{registry: "10.0.0.1:5000", user: "alice", auth: "x"}
	none := credentials{registry: "10.0.0.1:5000"}
	cases := []struct {
		name, engine string
		c            credentials
		want, hint   string
	}{
		{"wrong password", "Error response from daemon: unauthorized: authentication required", alice,
			"pulling " + ref + " on host far: registry 10.0.0.1:5000 refused the credentials of alice from the docker configuration of this machine: ",
			"docker login 10.0.0.1:5000 on this machine"},
		{"no credentials", `Error response from daemon: Get "http://10.0.0.1:5000/v2/hbl/manifests/sha256:aa": no basic auth credentials`, none,
			"registry 10.0.0.1:5000 wants credentials, and the docker configuration of this machine has none for it",
			"docker login 10.0.0.1:5000 on this machine"},
		{"nothing listening", `Error response from daemon: Get "https://10.0.0.1:5000/v2/": dial tcp 10.0.0.1:5000: connect: connection refused`, alice,
			"pulling " + ref + " on host far: the engine there cannot reach registry 10.0.0.1:5000: ",
			"the engine of host far talks to 10.0.0.1:5000 itself"},
		{"untrusted certificate", `Error response from daemon: Get "https://10.0.0.1:5000/v2/": x509: certificate signed by unknown authority`, alice,
			"cannot reach registry 10.0.0.1:5000", "/etc/docker/certs.d/10.0.0.1:5000/ca.crt"},
	}
	for _, c := range cases {
		err := registryError("pulling", ref, "far", c.c, errors.New(c.engine))
		var re *RegistryError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), c.want) || !strings.HasSuffix(err.Error(), c.engine) {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !strings.Contains(re.Hint(), c.hint) {
			t.Errorf("%s: hint %q, want it to say %q", c.name, re.Hint(), c.hint)
		}
	}
	hub := &RegistryError{Problem: RegistryAuth, Op: "pulling", Ref: "hermes/box", Registry: "docker.io", Err: errors.New("denied")}
	if !strings.HasPrefix(hub.Hint(), "docker login on this machine") || !strings.Contains(hub.Error(), "on the local host") {
		t.Errorf("Docker Hub: %v; hint %q", hub, hub.Hint())
	}
	other := registryError("pulling", ref, "", alice, errors.New("manifest unknown"))
	var re *RegistryError
	if errors.As(other, &re) || other.Error() != "pulling "+ref+" on the local host: manifest unknown" {
		t.Errorf("a missing manifest: %v", other)
	}
}
