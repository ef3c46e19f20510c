package spec

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
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

// hosts reads the hosts: mapping n; tls: is relative to the file at path.
func (p *parser) hosts(cfg *Config, n *yaml.Node, path string) {
	for name, e := range p.mapping(n, nil) {
		if !boxNamePattern().MatchString(name) {
			p.errorf(e.key, "use a lowercase name of letters, digits and dashes", "bad host name %q", name)
		}
		if !p.kind(e.value, yaml.MappingNode, "a mapping with docker:, context: or kubernetes:") {
			continue
		}
		cfg.Hosts[name] = p.host(name, e, path)
	}
}

func (p *parser) host(name string, e entry, path string) Host {
	host := Host{Name: name}
	fields := p.mapping(e.value, hostKeys)
	if f, ok := fields["docker"]; ok {
		host.Docker, _ = p.str(f.value)
	}
	if f, ok := fields["context"]; ok {
		host.Context, _ = p.str(f.value)
	}
	if f, ok := fields["tls"]; ok {
		if host.TLS, _ = p.str(f.value); host.TLS != "" && !filepath.IsAbs(host.TLS) {
			host.TLS = filepath.Join(filepath.Dir(path), host.TLS)
		}
	}
	if f, ok := fields["kubernetes"]; ok {
		if host.Docker != "" || host.Context != "" || host.TLS != "" {
			p.errorf(f.key, "a host is either a Docker engine (docker: or context:) or a Kubernetes namespace (kubernetes:), never both", "host %s: kubernetes: goes without docker:, context: and tls:", name)
			return host
		}
		host.Kubernetes = p.kubernetes(name, f, path)
		return host
	}
	if (host.Docker == "") == (host.Context == "") {
		p.errorf(e.key, "e.g. {docker: ssh://me@nexus}, {context: nexus} or {kubernetes: {context: prod, namespace: boxes}}", "host %s needs exactly one of docker:, context: or kubernetes:", name)
	} else if f, ok := fields["docker"]; ok && host.Docker != "" {
		if hint, err := checkDockerURL(host.Docker, host.TLS != ""); err != nil {
			p.errorf(f.value, hint, "host %s: %v", name, err)
		}
	}
	if f, ok := fields["tls"]; ok && host.TLS != "" && !strings.HasPrefix(host.Docker, "tcp://") {
		p.errorf(f.value, "tls: names the directory with ca.pem, cert.pem and key.pem for a tcp:// engine", "host %s: tls: goes with docker: tcp://…", name)
	}
	return host
}

// kubernetes reads a host's kubernetes: mapping: the context that reaches
// the cluster and the namespace its boxes live in, both required (a host
// that followed whatever context is current would apply to another cluster
// the day someone switches it); kubeconfig: is relative to the file at path.
func (p *parser) kubernetes(name string, e entry, path string) *Kubernetes {
	k := &Kubernetes{}
	if !p.kind(e.value, yaml.MappingNode, "a mapping with context: and namespace:") {
		return k
	}
	fields := p.mapping(e.value, kubeKeys)
	if f, ok := fields["context"]; ok {
		k.Context, _ = p.str(f.value)
	}
	if f, ok := fields["namespace"]; ok {
		if k.Namespace, _ = p.str(f.value); k.Namespace != "" && !namespacePattern().MatchString(k.Namespace) {
			p.errorf(f.value, "a namespace is up to 63 lowercase letters, digits and '-', starting and ending with a letter or digit", "host %s: bad namespace %q", name, k.Namespace)
		}
	}
	if f, ok := fields["kubeconfig"]; ok {
		if k.Kubeconfig, _ = p.str(f.value); k.Kubeconfig != "" && !filepath.IsAbs(k.Kubeconfig) {
			k.Kubeconfig = filepath.Join(filepath.Dir(path), k.Kubeconfig)
		}
	}
	if k.Context == "" || k.Namespace == "" {
		p.errorf(e.key, "e.g. kubernetes: {context: prod, namespace: boxes}; kubectl config get-contexts lists the contexts", "host %s: kubernetes: needs context: and namespace:", name)
	}
	return k
}
