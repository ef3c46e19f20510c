package docker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/cli/cli/command"
	"github.com/docker/cli/cli/config"
	"github.com/docker/cli/cli/connhelper"
	dcontext "github.com/docker/cli/cli/context/docker"
	"github.com/docker/cli/cli/context/store"
	"github.com/docker/docker/client"
	"github.com/docker/go-connections/tlsconfig"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/spec"
)

// ConnectTimeout bounds reaching one engine: the ssh or TCP connection, the
// TLS handshake and the first API answers.
var ConnectTimeout = 10 * time.Second

// Endpoint is where one host's engine is and how it is reached, resolved
// and checked before anything dials it.
type Endpoint struct {
	// Host is the boxes.yaml host name; "" is the local engine.
	Host string
	// URL is the engine's address: unix://, tcp:// or ssh://.
	URL string
	// Context is the docker context the address came from, if any.
	Context string

	// opts build the API client; ssh is the command ssh runs for an ssh:// URL.
	opts []client.Opt
	ssh  []string
	// dialErr keeps the last failure to open a TCP connection, which the
	// API client reduces to "Cannot connect to the Docker daemon".
	dialErr *atomic.Pointer[error]
}

// sshFlags are given to every ssh that reaches an engine: batch mode, so it
// never waits on a password or host key prompt nobody sees, and a bounded
// connect time.
func sshFlags() []string {
	secs := int((ConnectTimeout + time.Second - 1) / time.Second)
	return []string{"-o", "BatchMode=yes", "-o", fmt.Sprintf("ConnectTimeout=%d", secs)}
}

// HostError is a failure to reach one host's engine, naming the host and,
// where there is one, what to fix.
type HostError struct {
	Host string // boxes.yaml name; "" is the local engine
	URL  string
	Err  error
	Hint string
}

func (e *HostError) Error() string {
	where := "the local engine"
	if e.Host != "" {
		where = "host " + e.Host
	}
	if e.URL != "" {
		where += " (" + e.URL + ")"
	}
	// Over ssh the client names a placeholder address, not the engine's.
	return where + ": " + strings.Replace(e.Err.Error(), " at http://docker.example.com", "", 1)
}

func (e *HostError) Unwrap() error { return e.Err }

// Is makes every HostError a reconcile.ErrUnreachable.
func (e *HostError) Is(target error) bool { return target == engine.ErrUnreachable }

// HintLines is what to do about it, printed after the error.
func (e *HostError) HintLines() []string {
	if e.Hint == "" {
		return nil
	}
	return []string{e.Hint}
}

// Resolve works out how to reach host's engine without dialling it: its
// docker: URL with its TLS material read and checked, or its docker
// context looked up in the context store; for the local host (""), the
// environment's DOCKER_HOST or DOCKER_CONTEXT, or the default socket.
func Resolve(h spec.Host) (Endpoint, error) {
	switch {
	case h.Docker != "" && h.Context != "":
		return Endpoint{}, &HostError{Host: h.Name, Err: errors.New("both docker: and context: are set"), Hint: "keep one of them in boxes.yaml"}
	case h.Docker != "":
		return resolveURL(h.Name, h.Docker, h.TLS)
	case h.Context != "" && h.Context != command.DefaultContextName:
		return resolveContext(h.Name, h.Context)
	case h.Name != "" && h.Context == "":
		return Endpoint{}, &HostError{Host: h.Name, Err: errors.New("neither docker: nor context: is set"), Hint: "e.g. {docker: ssh://me@nexus} or {context: nexus}"}
	}
	return resolveLocal(h.Name)
}

func resolveLocal(name string) (Endpoint, error) {
	if host := os.Getenv(client.EnvOverrideHost); host != "" {
		if strings.HasPrefix(host, "ssh://") {
			return resolveURL(name, host, "")
		}
		// DOCKER_CERT_PATH and DOCKER_TLS_VERIFY go with DOCKER_HOST.
		return Endpoint{Host: name, URL: host, opts: []client.Opt{client.FromEnv}}, nil
	}
	ctxName := os.Getenv(command.EnvOverrideContext)
	if ctxName == "" {
		ctxName = config.LoadDefaultConfigFile(io.Discard).CurrentContext
	}
	if ctxName != "" && ctxName != command.DefaultContextName {
		ep, err := resolveContext(name, ctxName)
		if err != nil {
			var he *HostError
			if errors.As(err, &he) {
				he.Hint += " (the local engine follows DOCKER_CONTEXT, or docker context use)"
			}
		}
		return ep, err
	}
	return Endpoint{Host: name, URL: client.DefaultDockerHost, opts: []client.Opt{client.FromEnv}}, nil
}

func resolveURL(name, raw, tlsDir string) (Endpoint, error) {
	ep := Endpoint{Host: name, URL: raw}
	fail := func(hint string, format string, args ...any) (Endpoint, error) {
		return Endpoint{}, &HostError{Host: name, URL: raw, Err: fmt.Errorf(format, args...), Hint: hint}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fail("use ssh://user@host, tcp://host:2376 with tls:, or unix:///path/to/docker.sock", "not an engine address: %v", err)
	}
	switch u.Scheme {
	case "ssh":
		return ep.withSSH(raw)
	case "unix":
		ep.opts = []client.Opt{client.WithHost(raw)}
		return ep, nil
	case "tcp":
		if tlsDir == "" {
			return fail("add tls: DIR with the engine's ca.pem and your cert.pem and key.pem, or reach the engine over ssh://", "a tcp:// engine needs TLS material")
		}
		cfg, err := loadTLS(tlsDir)
		if err != nil {
			return fail("tls: names a directory with ca.pem (the engine's CA), cert.pem and key.pem (your client certificate), as DOCKER_CERT_PATH does", "TLS material: %v", err)
		}
		ep.dialErr = new(atomic.Pointer[error])
		ep.opts = []client.Opt{client.WithHost(raw), client.WithHTTPClient(tlsHTTPClient(cfg, ep.dialErr))}
		return ep, nil
	}
	return fail("use ssh://, tcp:// or unix://", "boxes cannot reach an engine over %s://", u.Scheme)
}

// loadTLS reads dir's ca.pem, cert.pem and key.pem, each checked on its own
// so that the error names the file at fault.
func loadTLS(dir string) (*tls.Config, error) {
	files := map[string]string{}
	for _, name := range []string{"ca.pem", "cert.pem", "key.pem"} {
		f := filepath.Join(dir, name)
		fh, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		fh.Close()
		files[name] = f
	}
	return tlsconfig.Client(tlsconfig.Options{CAFile: files["ca.pem"], CertFile: files["cert.pem"], KeyFile: files["key.pem"]})
}

func tlsHTTPClient(cfg *tls.Config, dialErr *atomic.Pointer[error]) *http.Client {
	dialer := &net.Dialer{Timeout: ConnectTimeout, KeepAlive: 30 * time.Second}
	return &http.Client{
		Transport: &http.Transport{
			TLSClientConfig:     cfg,
			TLSHandshakeTimeout: ConnectTimeout,
			// A plan's parallel calls each hold a connection: keep them
			// all for the next calls rather than the default 2, so that
			// later calls skip the TCP and TLS handshakes.
			MaxIdleConnsPerHost: 16,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := dialer.DialContext(ctx, network, addr)
				if err != nil {
					dialErr.Store(&err)
				}
				return c, err
			},
		},
		CheckRedirect: client.CheckRedirect,
	}
}

// withSSH reaches raw through ssh running `docker system dial-stdio` on the
// remote, with sshFlags.
func (ep Endpoint) withSSH(raw string) (Endpoint, error) {
	flags := sshFlags()
	helper, err := connhelper.GetConnectionHelperWithSSHOpts(raw, flags)
	if err != nil {
		return Endpoint{}, &HostError{Host: ep.Host, URL: raw, Err: err, Hint: "use ssh://user@host or ssh://user@host/path/to/docker.sock"}
	}
	ep.ssh = flags
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := helper.Dialer(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return newSSHConn(c), nil
	}
	ep.opts = []client.Opt{
		// Every new connection is a new ssh session: keep enough idle ones
		// for compose's parallel calls to reuse.
		client.WithHTTPClient(&http.Client{Transport: &http.Transport{DialContext: dial, MaxIdleConnsPerHost: 16}}),
		client.WithHost(helper.Host),
		client.WithDialContext(dial),
	}
	return ep, nil
}

// sshConn is a connection through an ssh command (the docker CLI's
// commandconn) that says why ssh is gone when a write finds it gone. ssh
// that could not connect exits at once; the first read to find its output
// ended gets ssh's own words ("stderr=… Connection refused"), while a
// request written after it exited fails with a broken pipe, or, once the
// read has waited for ssh, a closed file, and says nothing. Which of the
// two the request met first was a race. It keeps commandconn's half
// closes: an exec's stdin ends with CloseWrite.
type sshConn struct {
	net.Conn
	once    sync.Once
	words   error         // the first read error with ssh's words
	said    chan struct{} // closed once words is set
	reading atomic.Int32  // reads under way
	closed  atomic.Bool   // closed by its user, not by ssh's end
}

// sshWordsWait is how long a write that found ssh gone waits for a read
// under way to get ssh's words; past it the write's own error stands.
const sshWordsWait = 2 * time.Second

func newSSHConn(c net.Conn) *sshConn {
	return &sshConn{Conn: c, said: make(chan struct{})}
}

func (c *sshConn) Read(p []byte) (int, error) {
	c.reading.Add(1)
	defer c.reading.Add(-1)
	n, err := c.Conn.Read(p)
	if err != nil && strings.Contains(err.Error(), "stderr=") {
		c.once.Do(func() { c.words = err; close(c.said) })
	}
	return n, err
}

func (c *sshConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err == nil || c.closed.Load() || !(errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed)) {
		return n, err
	}
	// ssh is gone: its output has ended, so a read returns at once with
	// its words. With no read under way, this write reads (the connection
	// is dead for its user, so nobody misses the byte); with one, the
	// write waits for what that read finds rather than take its bytes.
	if errors.Is(err, syscall.EPIPE) && c.reading.Load() == 0 {
		_, _ = c.Read(make([]byte, 1))
	}
	select {
	case <-c.said:
		return n, c.words
	case <-time.After(sshWordsWait):
		return n, err
	}
}

// Close closes the connection; a write after it fails at once.
func (c *sshConn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

// CloseWrite ends what is written, as commandconn does: ssh's stdin is
// closed, and the remote command reads its end.
func (c *sshConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// CloseRead ends what is read, as commandconn does.
func (c *sshConn) CloseRead() error {
	if cr, ok := c.Conn.(interface{ CloseRead() error }); ok {
		return cr.CloseRead()
	}
	return nil
}

// resolveContext looks name up in the docker CLI's context store, the way
// the docker CLI would but with errors that come back to us (the CLI
// library's own lazy path exits the process on them).
func resolveContext(host, name string) (Endpoint, error) {
	fail := func(err error, hint string) (Endpoint, error) {
		return Endpoint{}, &HostError{Host: host, Err: err, Hint: hint}
	}
	s := store.New(config.ContextStoreDir(), command.DefaultContextStoreConfig())
	meta, err := s.GetMetadata(name)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return fail(fmt.Errorf("docker context %q does not exist", name), "docker context ls lists the contexts there are; correct context: in boxes.yaml or create it with docker context create")
		}
		return fail(fmt.Errorf("reading docker context %q: %w", name, err), "docker context inspect "+name+" shows what is wrong with it")
	}
	epMeta, err := dcontext.EndpointFromContext(meta)
	if err != nil {
		return fail(fmt.Errorf("docker context %q: %w", name, err), "docker context inspect "+name+" shows its endpoints")
	}
	if epMeta.Host == "" {
		return fail(fmt.Errorf("docker context %q names no engine address", name), "docker context update "+name+" --docker host=…")
	}
	ep := Endpoint{Host: host, URL: epMeta.Host, Context: name}
	if strings.HasPrefix(epMeta.Host, "ssh://") {
		return ep.withSSH(epMeta.Host)
	}
	withTLS, err := dcontext.WithTLSData(s, name, epMeta)
	if err != nil {
		return fail(fmt.Errorf("docker context %q: its TLS material: %w", name, err), "docker context inspect "+name+" shows where it keeps it")
	}
	opts, err := withTLS.ClientOpts()
	if err != nil {
		return fail(fmt.Errorf("docker context %q: %w", name, err), "docker context inspect "+name+" shows its endpoint")
	}
	ep.opts = opts
	return ep, nil
}

// explain turns a failure to reach an engine into a HostError with a hint
// for the causes people meet: nothing listening, no answer, ssh refusing.
func (ep Endpoint) explain(ctx context.Context, took time.Duration, err error) error {
	if ep.dialErr != nil {
		if d := ep.dialErr.Load(); d != nil {
			err = *d
		}
	}
	msg := err.Error()
	// The ssh helper's errors carry ssh's own words after "stderr=".
	if i := strings.LastIndex(msg, "stderr="); i >= 0 && strings.TrimSpace(msg[i+len("stderr="):]) != "" {
		msg = strings.TrimSpace(msg[i+len("stderr="):])
	}
	hint := ""
	switch {
	case ctx.Err() != nil || took >= ConnectTimeout*9/10 || errors.Is(err, context.DeadlineExceeded) || strings.Contains(msg, "timed out") || strings.Contains(msg, "Timeout"):
		msg = fmt.Sprintf("no answer within %s", ConnectTimeout)
		hint = "check that the machine is up and that the address and port in boxes.yaml are its engine's (or sshd's)"
	case strings.Contains(msg, "Host key verification failed"):
		hint = "ssh checks the host key and boxes never answers its prompt: run ssh once by hand to check and accept it"
	case strings.Contains(msg, "Permission denied"):
		hint = "boxes runs ssh in batch mode, without password prompts: load your key into ssh-agent or name it in ~/.ssh/config"
	case errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(msg, "onnection refused"):
		hint = "nothing listens there: is the engine (or sshd) running, and is the port right?"
	case strings.HasPrefix(ep.URL, "unix://") && (errors.Is(err, syscall.ENOENT) || strings.Contains(msg, "Cannot connect to the Docker daemon")):
		hint = "no engine answers on that socket: is dockerd running, and is the path right?"
	case strings.Contains(msg, "command not found") || strings.Contains(msg, "docker: not found"):
		hint = "the docker CLI must be on the remote user's PATH for ssh:// to work"
	case strings.Contains(msg, "certificate") || strings.Contains(msg, "tls:"):
		hint = "the engine's certificate and the TLS material in boxes.yaml do not fit: check ca.pem, cert.pem and key.pem"
	}
	return &HostError{Host: ep.Host, URL: ep.URL, Err: errors.New(msg), Hint: hint}
}

// ErrSameEngine is two host entries that reach one engine.
var ErrSameEngine = errors.New("reach the same Docker engine")

// SameEngineAs is the refusal of e's host entry when host first, checked
// before it, already reaches e's engine (the same engine ID): boxes would
// see each box twice, and a move between them would delete the only copy.
func (e *Engine) SameEngineAs(first string) error {
	a, b := hostLabel(first), hostLabel(e.Host)
	if b < a {
		a, b = b, a
	}
	return &HostError{Host: e.Host, URL: e.Endpoint.URL,
		Err:  fmt.Errorf("%s and %s %w (ID %s)", a, b, ErrSameEngine, e.ID()),
		Hint: "keep one host entry per engine in boxes.yaml"}
}

func hostLabel(name string) string {
	if name == "" {
		return "the local host"
	}
	return "host " + name
}
