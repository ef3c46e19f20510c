// Package regcred reads a registry's credentials from the docker
// configuration of the machine running boxes, as the docker CLI reads it
// (auths, credsStore, credHelpers; DOCKER_CONFIG or ~/.docker). Docker
// hosts get them with each pull and push; a cluster's nodes get them as an
// image pull secret boxes makes.
package regcred

import (
	"fmt"
	"os"

	"github.com/distribution/reference"
	"github.com/docker/cli/cli/config"
	"github.com/docker/cli/cli/config/types"
)

// dockerHubKey is the key Docker Hub's credentials have in a docker
// configuration: the docker CLI's historical index address, not its name.
const dockerHubKey = "https://index.docker.io/v1/"

// Credentials are what the docker configuration holds for one registry.
type Credentials struct {
	// Registry is the registry's name as references spell it ("docker.io"
	// for Docker Hub's short names); Key the configuration's key for it.
	Registry, Key string
	// Auth is what the configuration holds; its zero value when it holds
	// nothing for the registry (pulls go anonymous).
	Auth types.AuthConfig
}

// Empty is no credentials at all.
func (c Credentials) Empty() bool {
	a := c.Auth
	return a.Username == "" && a.Password == "" && a.IdentityToken == "" && a.RegistryToken == ""
}

// Registry is the registry of image reference ref, as references spell it.
func Registry(ref string) (string, error) {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return "", fmt.Errorf("%s is not an image reference: %w", ref, err)
	}
	return reference.Domain(named), nil
}

// For reads the credentials for ref's registry.
func For(ref string) (Credentials, error) {
	registry, err := Registry(ref)
	if err != nil {
		return Credentials{}, err
	}
	c := Credentials{Registry: registry, Key: registry}
	if registry == "docker.io" || registry == "index.docker.io" {
		c.Key = dockerHubKey
	}
	// The library caches its default directory for the whole process, so
	// DOCKER_CONFIG is read here, each time: a changed login is seen.
	cf, err := config.Load(os.Getenv(config.EnvOverrideConfigDir))
	if err != nil {
		return c, fmt.Errorf("reading the docker configuration for %s's credentials: %w", registry, err)
	}
	a, err := cf.GetAuthConfig(c.Key)
	if err != nil {
		return c, fmt.Errorf("reading %s's credentials from the docker configuration: %w", registry, err)
	}
	c.Auth = a
	return c, nil
}
