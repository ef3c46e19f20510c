package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/mcp"
	"github.com/hermes-box/boxes/regcred"
)

// A box's container on a cluster is its Sandbox's one pod, named as the
// Sandbox (the container's ID), and the container in it named after its
// service.

// pod is the pod of Sandbox id; nil when it has none (suspended, or not yet made).
func (e *Engine) pod(ctx context.Context, id string) (*corev1.Pod, error) {
	p, err := e.core.CoreV1().Pods(e.namespace).Get(ctx, id, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, e.apiError("reading pod "+id, err)
	}
	return p, nil
}

// ContainerID is the Sandbox of box's service.
func (e *Engine) ContainerID(ctx context.Context, box, service string) (string, error) {
	sbs, err := e.boxSandboxes(ctx, box)
	if err != nil {
		return "", err
	}
	for _, sb := range sbs {
		if sb.Labels[compose.ComposeServiceLabel] == service {
			return sb.Name, nil
		}
	}
	return "", fmt.Errorf("box %s has no %s on host %s", box, service, e.host.Name)
}

// ready waits until the pod of box's service is ready (its readiness probe,
// boxes' own health check, passes). A container that ended or restarts
// fails at once, with its last log lines.
func (e *Engine) ready(ctx context.Context, box, service, what string) (*corev1.Pod, error) {
	id := objectName(compose.ContainerName(box, service))
	ctx, cancel := context.WithTimeout(ctx, WaitTimeout)
	defer cancel()
	last := "it has no pod yet"
	var refusedSince, pullSince time.Time
	for {
		p, err := e.pod(ctx, id)
		if err != nil && ctx.Err() == nil {
			return nil, err
		}
		if p != nil {
			state, code, restarts, why := podState(p)
			if state != engine.Created || why == "" {
				refusedSince = time.Time{}
			} else if refusedSince.IsZero() {
				refusedSince = time.Now()
			}
			switch {
			case state == engine.Dead && pullFailed(why) && pullSince.IsZero():
				pullSince, last = time.Now(), "the node has not pulled its image yet ("+why+")"
			case state == engine.Dead && pullFailed(why) && time.Since(pullSince) > PullRetriedFor:
				return nil, e.pullError(service, box, p, why)
			case state == engine.Dead && pullFailed(why):
				// The kubelet pulls again after a backoff: a pull secret
				// made a moment before the pod may not have reached its
				// cache at the first pull.
				last = "the node has not pulled its image yet (" + why + ")"
			case state == engine.Exited || state == engine.Dead || restarts > 0:
				return nil, fmt.Errorf("%s of %s: the container is %s (exit %d, %d restarts) %s; its last log lines: %s", service, box, state, code, restarts, why, e.lastLines(ctx, id, 3))
			case !refusedSince.IsZero() && time.Since(refusedSince) > RetriedFor:
				return nil, fmt.Errorf("%s of %s: the container could not be made for %s, the kubelet trying again: %s", service, box, RetriedFor, why)
			case !refusedSince.IsZero():
				last = "the kubelet has not made its container yet (" + why + ")"
			case podReady(p):
				return p, nil
			case state == engine.Running:
				last = "its health check has not passed yet"
			default:
				last = "its pod is " + strings.ToLower(string(p.Status.Phase))
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s of %s is not ready after %s: %s", what, box, WaitTimeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// pullFailed reports whether a container's waiting reason is its image
// not pulled.
func pullFailed(why string) bool {
	return strings.HasPrefix(why, "ErrImagePull:") || strings.HasPrefix(why, "ImagePullBackOff:")
}

// pullError is service of box whose pod p the node could not pull the
// image of, with what to do: the registry's credentials come from this
// machine's docker configuration, its certificate must be one the node
// trusts.
func (e *Engine) pullError(service, box string, p *corev1.Pod, why string) error {
	image := p.Spec.Containers[0].Image
	registry, err := regcred.Registry(image)
	if err != nil || !strings.Contains(image, "/") {
		return e.fail(fmt.Errorf("%s of %s: the node cannot pull image %s: %s", service, box, image, why), "")
	}
	hint := "docker login " + registry + " on this machine, then boxes apply: boxes gives the nodes its credentials as an image pull secret; a node must also reach " + registry + " and trust its certificate"
	return e.fail(fmt.Errorf("%s of %s: the node cannot pull image %s from registry %s: %s", service, box, image, registry, why), hint)
}

// PullRetriedFor is how long a pod whose image the node failed to pull is
// waited for before ready fails with the node's reason: long enough for
// the kubelet's first pull again, after its backoff of 10 s.
var PullRetriedFor = 25 * time.Second

// RetriedFor is how long a container the kubelet cannot make yet, and
// retries (kubeletRetries), is waited for before ready says why.
var RetriedFor = 45 * time.Second

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// WaitInit returns once the box's agent has finished hb init and its gate
// answers: both pods ready. Then the agent trusts the gate's authority (hb
// trust), best effort, as on Docker (docker.Engine.WaitInit says why).
func (e *Engine) WaitInit(ctx context.Context, box string) error {
	gate := make(chan error, 1)
	go func() {
		_, err := e.ready(ctx, box, compose.GateService, "the gate")
		gate <- err
	}()
	_, agent := e.ready(ctx, box, compose.AgentService, "hb init")
	if agent != nil {
		return agent
	}
	if err := <-gate; err != nil {
		return err
	}
	if id, err := e.ContainerID(ctx, box, compose.AgentService); err == nil {
		_, _ = e.Run(ctx, id, "root", []string{compose.HB, "trust", "--wait", "5"}, io.Discard, io.Discard)
	}
	return nil
}

// WaitReady returns once the box's executor answers an authenticated MCP
// initialize, reached through the API server's port-forward, with how a
// person reaches it: boxes open, which forwards it the same way.
func (e *Engine) WaitReady(ctx context.Context, box, token string) (string, error) {
	p, err := e.ready(ctx, box, compose.ExecutorService, "the executor")
	if err != nil {
		return "", err
	}
	f, err := e.forwardPod(ctx, p.Name, compose.ExecutorPort)
	if err != nil {
		return "", err
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(ctx, WaitTimeout)
	defer cancel()
	for {
		err := mcp.Initialize(ctx, f.URL()+"/mcp", token)
		if err == nil {
			return "boxes open " + box + " (through the API server of host " + e.host.Name + ")", nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("executor of %s: %w", box, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// podForward is a port of a pod forwarded to 127.0.0.1 here.
type podForward struct {
	url  string
	stop chan struct{}
	done chan struct{}
	err  error
}

func (f *podForward) URL() string           { return f.url }
func (f *podForward) Done() <-chan struct{} { return f.done }
func (f *podForward) Err() error            { <-f.done; return f.err }
func (f *podForward) Close() error {
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	<-f.done
	return nil
}

// forwardPod forwards a free local port to port of pod name.
func (e *Engine) forwardPod(ctx context.Context, name string, port int) (*podForward, error) {
	transport, upgrader, err := spdy.RoundTripperFor(e.cfg)
	if err != nil {
		return nil, err
	}
	req := e.core.CoreV1().RESTClient().Post().Resource("pods").Namespace(e.namespace).Name(name).SubResource("portforward")
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, req.URL())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	local := l.Addr().(*net.TCPAddr).Port
	l.Close()
	f := &podForward{url: "http://127.0.0.1:" + strconv.Itoa(local), stop: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("%d:%d", local, port)}, f.stop, ready, io.Discard, io.Discard)
	if err != nil {
		return nil, err
	}
	go func() {
		f.err = fw.ForwardPorts()
		close(f.done)
	}()
	select {
	case <-ready:
		return f, nil
	case <-f.done:
		return nil, e.apiError("forwarding a port of pod "+name, f.err)
	case <-ctx.Done():
		f.Close()
		return nil, ctx.Err()
	}
}

// Forward: a kubernetes: host's executor is forwarded by boxes open
// through the API server (ForwardExecutor), not by port.
func (e *Engine) Forward(ctx context.Context, bind string, port int) (engine.Forward, error) {
	return nil, errors.New("a kubernetes: host forwards a box's executor through the API server (boxes open BOX)")
}

// ForwardExecutor forwards a local port to the executor of box through
// the API server's port-forward, as kubectl port-forward does, and returns
// once an HTTP request through it is answered. It lives until Close, or
// until the API server ends the stream (Done).
func (e *Engine) ForwardExecutor(ctx context.Context, box string) (engine.Forward, error) {
	id := objectName(compose.ContainerName(box, compose.ExecutorService))
	p, err := e.pod(ctx, id)
	if err != nil {
		return nil, err
	}
	if p == nil || p.Status.Phase != corev1.PodRunning {
		return nil, e.fail(fmt.Errorf("the executor of %s does not run (no running pod %s)", box, id), "boxes doctor "+box)
	}
	f, err := e.forwardPod(ctx, p.Name, compose.ExecutorPort)
	if err != nil {
		return nil, err
	}
	if err := engine.AwaitAnswer(ctx, f.URL()+"/", f.Done(), ForwardAnswerTimeout); err != nil {
		f.Close()
		if errors.Is(err, engine.ErrForwardEnded) {
			err = fmt.Errorf("%w: %v", err, f.Err())
		}
		return nil, e.fail(fmt.Errorf("the executor of %s through the API server's port-forward: %w", box, err), "boxes doctor "+box)
	}
	return f, nil
}

// ForwardAnswerTimeout is how long ForwardExecutor waits for the executor
// to answer through the forward.
var ForwardAnswerTimeout = 30 * time.Second

// ForwardVia: through the API server of the host.
func (e *Engine) ForwardVia() string {
	return ", forwarded through the API server of host " + e.host.Name
}

var _ engine.BoxForwarder = (*Engine)(nil)

// ControlPlaneURL is the API server's address, as the host's kubeconfig
// gives it: its scheme (https when it names none, as client-go reads it)
// and host alone ("" when it does not parse).
func (e *Engine) ControlPlaneURL() string {
	host := e.cfg.Host
	if host != "" && !strings.Contains(host, "://") {
		host = "https://" + host
	}
	u, err := url.Parse(host)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

var _ engine.ControlPlane = (*Engine)(nil)

// Exec runs o.Cmd in the pod of Sandbox id, through the API server. The
// API runs commands as the container's user in its working directory with
// its environment: another user, directory or variables go through env,
// cd and runuser in the command.
func (e *Engine) Exec(ctx context.Context, id string, o engine.ExecOptions) (int, error) {
	p, err := e.pod(ctx, id)
	if err != nil {
		return 0, err
	}
	if p == nil {
		return 0, fmt.Errorf("%s does not run (no pod)", id)
	}
	cmd := o.Cmd
	if o.User != "" && o.User != "root" && o.User != "0" {
		cmd = append([]string{"runuser", "-u", o.User, "--"}, cmd...)
	}
	if len(o.Env) > 0 {
		cmd = append(append([]string{"env"}, o.Env...), cmd...)
	}
	if o.WorkDir != "" {
		cmd = append([]string{"sh", "-c", `cd "$0" && exec "$@"`, o.WorkDir}, cmd...)
	}
	req := e.core.CoreV1().RESTClient().Post().Resource("pods").Namespace(e.namespace).Name(p.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: p.Spec.Containers[0].Name, Command: cmd,
			Stdin: o.Stdin != nil, Stdout: o.Stdout != nil, Stderr: o.Stderr != nil && !o.TTY, TTY: o.TTY,
		}, kscheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(e.cfg, http.MethodPost, req.URL())
	if err != nil {
		return 0, err
	}
	var sizes *terminalSizes
	if o.TTY {
		sizes = &terminalSizes{c: make(chan remotecommand.TerminalSize, 1)}
		if o.Started != nil {
			o.Started(sizes.resize)
		}
	}
	// The API streams stdout and stderr side by side: one lock for both,
	// as callers often pass one writer for the two.
	var mu sync.Mutex
	so := remotecommand.StreamOptions{Stdin: o.Stdin, Stdout: locked(&mu, o.Stdout), Stderr: locked(&mu, o.Stderr), Tty: o.TTY}
	if o.TTY {
		so.Stderr = nil
		so.TerminalSizeQueue = sizes
	}
	err = ex.StreamWithContext(ctx, so)
	var exit interface{ ExitStatus() int }
	if errors.As(err, &exit) {
		return exit.ExitStatus(), nil
	}
	if err != nil {
		return 0, e.apiError("running a command in "+id, err)
	}
	return 0, nil
}

// lockedWriter is a writer written under a lock it shares.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func locked(mu *sync.Mutex, w io.Writer) io.Writer {
	if w == nil {
		return nil
	}
	return lockedWriter{mu: mu, w: w}
}

// terminalSizes carries an exec's terminal size changes.
type terminalSizes struct {
	c chan remotecommand.TerminalSize
}

func (t *terminalSizes) resize(height, width uint) {
	select {
	case <-t.c:
	default:
	}
	t.c <- remotecommand.TerminalSize{Height: uint16(height), Width: uint16(width)}
}

func (t *terminalSizes) Next() *remotecommand.TerminalSize {
	s, ok := <-t.c
	if !ok {
		return nil
	}
	return &s
}

// Run is Exec without a terminal or input.
func (e *Engine) Run(ctx context.Context, container, user string, cmd []string, stdout, stderr io.Writer) (int, error) {
	return e.Exec(ctx, container, engine.ExecOptions{Cmd: cmd, User: user, Stdout: stdout, Stderr: stderr})
}

// Logs copies the logs of Sandbox id's pod.
func (e *Engine) Logs(ctx context.Context, id string, o engine.LogOptions, stdout, stderr io.Writer) error {
	opts := &corev1.PodLogOptions{Follow: o.Follow, Timestamps: o.Timestamps}
	if n, err := strconv.ParseInt(o.Tail, 10, 64); err == nil {
		opts.TailLines = &n
	}
	r, err := e.core.CoreV1().Pods(e.namespace).GetLogs(id, opts).Stream(ctx)
	if err != nil {
		return e.apiError("reading the logs of "+id, err)
	}
	defer r.Close()
	_, err = io.Copy(stdout, r)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// lastLines is the last n lines of id's logs on one line; "" if unread.
func (e *Engine) lastLines(ctx context.Context, id string, n int) string {
	var out bytes.Buffer
	if err := e.Logs(ctx, id, engine.LogOptions{Tail: strconv.Itoa(n)}, &out, &out); err != nil {
		return ""
	}
	return strings.Join(strings.Fields(strings.ReplaceAll(out.String(), "\n", " | ")), " ")
}

// StillRunning reports whether Sandbox id's pod runs.
func (e *Engine) StillRunning(ctx context.Context, id string) (bool, error) {
	p, err := e.pod(ctx, id)
	if err != nil || p == nil {
		return false, err
	}
	state, _, _, _ := podState(p)
	return state == engine.Running, nil
}

// ContainerEnv is the environment Sandbox id's container was given: its
// Secret's.
func (e *Engine) ContainerEnv(ctx context.Context, id string) ([]string, error) {
	s, err := e.core.CoreV1().Secrets(e.namespace).Get(ctx, id, metav1.GetOptions{})
	if err != nil {
		return nil, e.apiError("reading the environment of "+id, err)
	}
	var env []string
	for k, v := range s.Data {
		env = append(env, k+"="+string(v))
	}
	return env, nil
}

// ContainerRuntime is the pod's runtime class, runc without one.
func (e *Engine) ContainerRuntime(ctx context.Context, id string) (string, error) {
	p, err := e.pod(ctx, id)
	if err != nil {
		return "", err
	}
	if p == nil || p.Spec.RuntimeClassName == nil {
		return "runc", nil
	}
	return *p.Spec.RuntimeClassName, nil
}
