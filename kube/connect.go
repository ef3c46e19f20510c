// Package kube is the engine of a kubernetes: host, a namespace of a
// Kubernetes cluster. A box there is three agent-sandbox Sandboxes (its
// agent, its executor and its gate, each a stateful singleton pod that
// stops by being suspended), a PersistentVolumeClaim for each of its
// volumes, a Secret with its token, Services that give the agent fixed
// addresses for its gate and executor, and NetworkPolicies that make the
// gate the agent's one way out. Every object carries the box's and the
// fleet's labels, and boxes lists and touches nothing else.
package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	sandboxv1 "sigs.k8s.io/agent-sandbox/api/v1beta1"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/spec"
)

// SandboxGroupVersion is the agent-sandbox API boxes speaks.
var SandboxGroupVersion = sandboxv1.GroupVersion

// InstallHint is how a cluster gets the Sandbox resource.
const InstallHint = "install agent-sandbox on the cluster (kubectl apply -f https://github.com/kubernetes-sigs/agent-sandbox/releases/download/v1.0.1/sandbox.yaml), then plan again"

// Connector reaches kubernetes: hosts.
type Connector struct{}

// Connect reaches host h's cluster and checks, before anything is planned
// there, that it can hold boxes: the API server answers and takes the
// context's credentials, the namespace exists, and the cluster serves the
// Sandbox resource. A cluster that cannot be reached is
// engine.ErrUnreachable, so that only this host's boxes fail.
func (Connector) Connect(ctx context.Context, h spec.Host) (engine.Engine, error) {
	return Connect(ctx, h)
}

// Connect is Connector.Connect, with the engine's own type.
func Connect(ctx context.Context, h spec.Host) (*Engine, error) {
	k := h.Kubernetes
	if k == nil {
		return nil, fmt.Errorf("host %s is not a kubernetes: host", h.Name)
	}
	cfg, herr := restConfig(*k)
	if herr != nil {
		return nil, herr.withHost(h.Name)
	}
	e, err := newEngine(h, cfg)
	if err != nil {
		return nil, &HostError{Host: h.Name, URL: cfg.Host, Err: err}
	}
	if err := e.check(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// restConfig is the client configuration of k's context, read as kubectl
// reads it: kubeconfig: when set, else KUBECONFIG, else ~/.kube/config.
func restConfig(k spec.Kubernetes) (*rest.Config, *HostError) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if k.Kubeconfig != "" {
		if _, err := os.Stat(k.Kubeconfig); err != nil {
			return nil, &HostError{Err: fmt.Errorf("kubeconfig: %w", err), Hint: "kubeconfig: names the file, absolute or beside boxes.yaml; without it boxes reads KUBECONFIG, then ~/.kube/config, as kubectl does"}
		}
		rules.ExplicitPath = k.Kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.Context})
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, &HostError{Err: fmt.Errorf("reading the kubeconfig: %w", err)}
	}
	if _, ok := raw.Contexts[k.Context]; !ok {
		files := strings.Join(rules.GetLoadingPrecedence(), ", ")
		return nil, &HostError{Err: fmt.Errorf("the kubeconfig (%s) has no context %q", files, k.Context), Hint: "kubectl config get-contexts lists the contexts it has"}
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, &HostError{Err: fmt.Errorf("context %s: %w", k.Context, err)}
	}
	cfg.UserAgent = "boxes"
	// client-go's default (5 requests a second, bursts of 10) throttles
	// one box's making, a dozen objects, by seconds; the API server's own
	// priority and fairness bound what a client may ask.
	cfg.QPS, cfg.Burst = 100, 200
	return cfg, nil
}

// withHost is e naming host.
func (e *HostError) withHost(host string) *HostError {
	e.Host = host
	return e
}

// Engine is one kubernetes: host: a namespace of a cluster.
type Engine struct {
	host      spec.Host
	namespace string
	cfg       *rest.Config
	core      kubernetes.Interface
	sandboxes rest.Interface

	mu sync.Mutex
	// refs are the registry references of images by ID, as PullImage
	// was given them: what the cluster's nodes pull.
	refs map[string]string
	// pullSecrets are the image pull secrets PullImage made, by reference.
	pullSecrets map[string]string
}

func newEngine(h spec.Host, cfg *rest.Config) (*Engine, error) {
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	sb, err := sandboxClient(cfg)
	if err != nil {
		return nil, err
	}
	return &Engine{host: h, namespace: h.Kubernetes.Namespace, cfg: cfg, core: core, sandboxes: sb, refs: map[string]string{}, pullSecrets: map[string]string{}}, nil
}

// scheme knows the Sandbox types, for the Sandbox client: made when a
// Kubernetes host is first reached, not by every command.
var scheme = sync.OnceValue(func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := sandboxv1.AddToScheme(s); err != nil {
		panic(err)
	}
	metav1.AddToGroupVersion(s, sandboxv1.GroupVersion)
	return s
})

// sandboxClient is a REST client of agent-sandbox's API group.
func sandboxClient(base *rest.Config) (rest.Interface, error) {
	cfg := rest.CopyConfig(base)
	gv := sandboxv1.GroupVersion
	cfg.GroupVersion = &gv
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(scheme()).WithoutConversion()
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return rest.RESTClientFor(cfg)
}

// check is Connect's checks, in the order a user fixes them.
func (e *Engine) check(ctx context.Context) error {
	ns := e.namespace
	if _, err := e.core.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return e.fail(fmt.Errorf("namespace %s does not exist", ns), "kubectl --context "+e.host.Kubernetes.Context+" create namespace "+ns+", or name another namespace: in boxes.yaml")
		case apierrors.IsForbidden(err):
			// A user whose rights end at the namespace may not read the
			// namespace object itself: what follows tells.
		default:
			return e.apiError("reading namespace "+ns, err)
		}
	}
	resources, err := e.core.Discovery().ServerResourcesForGroupVersion(sandboxv1.GroupVersion.String())
	if err != nil && !apierrors.IsNotFound(err) {
		return e.apiError("looking for the Sandbox resource", err)
	}
	found := false
	if resources != nil {
		for _, r := range resources.APIResources {
			found = found || r.Name == "sandboxes"
		}
	}
	if !found {
		return e.fail(fmt.Errorf("the cluster has no Sandbox resource (%s)", sandboxv1.GroupVersion), InstallHint)
	}
	return nil
}

// apiError is err from the API server while doing what: refused
// credentials, missing rights, or a server that could not be reached.
func (e *Engine) apiError(what string, err error) error {
	switch {
	case apierrors.IsUnauthorized(err):
		return e.fail(fmt.Errorf("the API server refused the credentials of context %s: %w", e.host.Kubernetes.Context, err), "renew them (kubectl --context "+e.host.Kubernetes.Context+" get pods tells whether they work)")
	case apierrors.IsForbidden(err):
		return e.fail(fmt.Errorf("%s: %w", what, err), "the context's user needs rights on sandboxes, pods, services, persistentvolumeclaims, secrets, configmaps and networkpolicies in namespace "+e.namespace)
	case Unreachable(err):
		return &HostError{Host: e.host.Name, URL: e.cfg.Host, Err: err, Gone: true}
	}
	return e.fail(fmt.Errorf("%s: %w", what, err), "")
}

func (e *Engine) fail(err error, hint string) error {
	return &HostError{Host: e.host.Name, URL: e.cfg.Host, Err: err, Hint: hint}
}

// Unreachable reports whether err is a failure to reach the API server (or
// losing it mid-request), rather than its answer.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	var ue *url.Error
	var ne net.Error
	if errors.As(err, &ne) || errors.As(err, &ue) {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EHOSTUNREACH) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) ||
		strings.Contains(err.Error(), "connection refused")
}

// HostError is a failure of one kubernetes: host, naming the host and the
// API server, with what to do about it.
type HostError struct {
	Host string
	URL  string
	Err  error
	Hint string
	// Gone: the API server could not be reached (engine.ErrUnreachable).
	Gone bool
}

func (e *HostError) Error() string {
	where := "host " + e.Host
	if e.URL != "" {
		where += " (" + e.URL + ")"
	}
	return where + ": " + e.Err.Error()
}

func (e *HostError) Unwrap() error { return e.Err }

// Is makes a HostError of a server gone an engine.ErrUnreachable.
func (e *HostError) Is(target error) bool { return e.Gone && target == engine.ErrUnreachable }

// HintLines is what to do about it, printed after the error.
func (e *HostError) HintLines() []string {
	if e.Hint == "" {
		return nil
	}
	return []string{e.Hint}
}
