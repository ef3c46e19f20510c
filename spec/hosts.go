package spec

import (
	"fmt"
	"net/url"
	"strings"
)

// checkDockerURL checks the form of a host's docker: address; whether the
// engine answers there is for connecting to tell. It returns a hint with
// the error.
func checkDockerURL(raw string, hasTLS bool) (string, error) {
	const forms = "use ssh://user@host, ssh://user@host/path/to/docker.sock, tcp://host:2376 with tls:, or unix:///path/to/docker.sock"
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || !strings.Contains(raw, "://") {
		return forms, fmt.Errorf("docker: %q is not an engine address", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return forms, fmt.Errorf("docker: %q has a query or fragment an engine address cannot have", raw)
	}
	switch u.Scheme {
	case "ssh":
		if u.Hostname() == "" {
			return forms, fmt.Errorf("docker: %q names no host", raw)
		}
		if _, ok := u.User.Password(); ok {
			return "use an ssh key (ssh-agent or ~/.ssh/config); boxes never types a password", fmt.Errorf("docker: %q holds a password", raw)
		}
	case "tcp":
		if u.Hostname() == "" {
			return forms, fmt.Errorf("docker: %q names no host", raw)
		}
		if u.Path != "" && u.Path != "/" {
			return forms, fmt.Errorf("docker: %q has a path a tcp:// address cannot have", raw)
		}
		if !hasTLS {
			return "add tls: DIR with the engine's ca.pem and your cert.pem and key.pem, or reach the engine over ssh://", fmt.Errorf("docker: %s needs tls: (a tcp:// engine without TLS gives anyone on the network root)", raw)
		}
	case "unix":
		if u.Host != "" || !strings.HasPrefix(u.Path, "/") {
			return "e.g. unix:///var/run/docker.sock (three slashes)", fmt.Errorf("docker: %q is not an absolute socket path", raw)
		}
	default:
		return forms, fmt.Errorf("docker: %q: boxes cannot reach an engine over %s://", raw, u.Scheme)
	}
	return "", nil
}
