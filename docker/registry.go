package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	dockerimage "github.com/docker/docker/api/types/image"
	registrytypes "github.com/docker/docker/api/types/registry"
	"github.com/docker/docker/pkg/jsonmessage"

	"github.com/hermes-box/boxes/regcred"
)

// Registry credentials come from the docker configuration of the machine
// running boxes, read as the docker CLI reads it (auths, credsStore,
// credHelpers; DOCKER_CONFIG or ~/.docker), and travel with each request to
// whichever engine pulls or pushes: no host needs a login of its own.

// credentials are what this machine's docker configuration holds for the
// registry of one reference.
type credentials struct {
	// registry is the registry's name as references spell it ("docker.io"
	// for Docker Hub's short names).
	registry string
	// auth is the X-Registry-Auth value; "" when the configuration has
	// nothing for the registry (the request goes anonymous).
	auth string
	// user is the user name sent, for messages; "" for a token or none.
	user string
}

// registryCredentials reads the credentials for ref's registry.
func registryCredentials(ref string) (credentials, error) {
	rc, err := regcred.For(ref)
	c := credentials{registry: rc.Registry}
	if err != nil || rc.Empty() {
		return c, err
	}
	a := rc.Auth
	c.user = a.Username
	c.auth, err = registrytypes.EncodeAuthConfig(registrytypes.AuthConfig{
		Username:      a.Username,
		Password:      a.Password,
		ServerAddress: a.ServerAddress,
		IdentityToken: a.IdentityToken,
		RegistryToken: a.RegistryToken,
	})
	return c, err
}

// RegistryProblem is what went wrong between an engine and a registry.
type RegistryProblem int

const (
	// RegistryAuth: the registry refused the credentials, or wanted some
	// and this machine's docker configuration has none for it.
	RegistryAuth RegistryProblem = iota + 1
	// RegistryUnreachable: the engine could not reach the registry (no
	// route, nothing listening, no name, a certificate it does not trust).
	RegistryUnreachable
)

// RegistryError is a pull or a push that the registry refused or the
// engine could not take to it.
type RegistryError struct {
	Problem RegistryProblem
	// Op is "pulling" or "pushing"; Ref the reference.
	Op, Ref string
	// Host is the boxes host whose engine talked to the registry ("" local).
	Host     string
	Registry string
	// User is the user whose credentials were sent; "" when none were.
	User string
	Err  error
}

func (e *RegistryError) Error() string {
	at := fmt.Sprintf("%s %s on %s: ", e.Op, e.Ref, hostLabel(e.Host))
	switch {
	case e.Problem == RegistryUnreachable:
		return at + fmt.Sprintf("the engine there cannot reach registry %s: %v", e.Registry, e.Err)
	case e.User == "":
		return at + fmt.Sprintf("registry %s wants credentials, and the docker configuration of this machine has none for it: %v", e.Registry, e.Err)
	default:
		return at + fmt.Sprintf("registry %s refused the credentials of %s from the docker configuration of this machine: %v", e.Registry, e.User, e.Err)
	}
}

func (e *RegistryError) Unwrap() error { return e.Err }

// Hint is the command to run on this machine, or what the host needs.
func (e *RegistryError) Hint() string {
	if e.Problem == RegistryUnreachable {
		return fmt.Sprintf("the engine of %s talks to %s itself: it must reach it, and trust its certificate (/etc/docker/certs.d/%s/ca.crt there) or list it in insecure-registries",
			hostLabel(e.Host), e.Registry, e.Registry)
	}
	login := "docker login " + e.Registry
	if e.Registry == "docker.io" {
		login = "docker login"
	}
	return login + " on this machine: boxes sends its credentials with every pull and push, so hosts need no login of their own"
}

// registryError classifies err, an engine's failure to pull or push ref
// with c: the engine reports a registry's refusals and network failures
// only as text (an error status 500), so the text decides.
func registryError(op, ref, host string, c credentials, err error) error {
	msg := strings.ToLower(err.Error())
	problem := RegistryProblem(0)
	switch {
	case containsAny(msg, "unauthorized", "authentication required", "no basic auth credentials", "access denied", "denied:"):
		problem = RegistryAuth
	case containsAny(msg, "dial tcp", "connection refused", "no such host", "i/o timeout", "no route to host",
		"network is unreachable", "tls handshake", "x509:", "certificate", "http response to https client", "client.timeout"):
		problem = RegistryUnreachable
	default:
		return fmt.Errorf("%s %s on %s: %w", op, ref, hostLabel(host), err)
	}
	return &RegistryError{Problem: problem, Op: op, Ref: ref, Host: host, Registry: c.registry, User: c.user, Err: err}
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// PullImage pulls ref, a registry reference pinned by digest, with the
// credentials of this machine's docker configuration, and checks that ref
// is then image.
func (e *Engine) PullImage(ctx context.Context, ref, image string) error {
	c, err := registryCredentials(ref)
	if err != nil {
		return fmt.Errorf("pulling %s on %s: %w", ref, hostLabel(e.Host), err)
	}
	r, err := e.api.ImagePull(ctx, ref, dockerimage.PullOptions{RegistryAuth: c.auth})
	if err != nil {
		return registryError("pulling", ref, e.Host, c, err)
	}
	defer r.Close()
	// The pull reports its later failures in its stream of progress messages.
	if err := jsonmessage.DisplayJSONMessagesStream(r, io.Discard, 0, false, nil); err != nil {
		return registryError("pulling", ref, e.Host, c, err)
	}
	got, err := e.ImageID(ctx, ref)
	if err != nil {
		return fmt.Errorf("after pulling %s on %s: %w", ref, hostLabel(e.Host), err)
	}
	if got != image {
		return fmt.Errorf("after pulling %s on %s: image ID %s, want %s", ref, hostLabel(e.Host), got, image)
	}
	return nil
}

// PushImage pushes ref, a tag the engine has, with the credentials of this
// machine's docker configuration, and returns the digest the registry
// stored it under (sha256:…).
func (e *Engine) PushImage(ctx context.Context, ref string) (string, error) {
	c, err := registryCredentials(ref)
	if err != nil {
		return "", fmt.Errorf("pushing %s from %s: %w", ref, hostLabel(e.Host), err)
	}
	r, err := e.api.ImagePush(ctx, ref, dockerimage.PushOptions{RegistryAuth: c.auth})
	if err != nil {
		return "", registryError("pushing", ref, e.Host, c, err)
	}
	defer r.Close()
	var digest string
	aux := func(m jsonmessage.JSONMessage) {
		var pushed struct{ Digest string }
		if m.Aux != nil && json.Unmarshal(*m.Aux, &pushed) == nil && pushed.Digest != "" {
			digest = pushed.Digest
		}
	}
	if err := jsonmessage.DisplayJSONMessagesStream(r, io.Discard, 0, false, aux); err != nil {
		return "", registryError("pushing", ref, e.Host, c, err)
	}
	if digest == "" {
		return "", fmt.Errorf("pushing %s from %s: the engine did not say which digest the registry stored", ref, hostLabel(e.Host))
	}
	return digest, nil
}

// RegistryDigest asks the engine, with the credentials of this machine's
// docker configuration, for the digest ref names in its registry now (for a
// multi-platform image, the digest of its index).
func (e *Engine) RegistryDigest(ctx context.Context, ref string) (string, error) {
	c, err := registryCredentials(ref)
	if err != nil {
		return "", err
	}
	d, err := e.api.DistributionInspect(ctx, ref, c.auth)
	if err != nil {
		return "", fmt.Errorf("asking the registry for %s through the engine: %w", ref, err)
	}
	return string(d.Descriptor.Digest), nil
}
