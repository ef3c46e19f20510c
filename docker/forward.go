package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	sshspec "github.com/docker/cli/cli/connhelper/ssh"

	"github.com/hermes-box/boxes/engine"
)

// Forward is a local port forwarded over ssh to a port on the loopback of
// the machine an engine runs on: an ssh -N -L process of our own, which
// lives until Close (or until the connection breaks: see Done).
type Forward struct {
	// url is the forwarded port's address here, http://127.0.0.1:PORT.
	url string

	cmd    *exec.Cmd
	stderr *lockedBuffer
	done   chan struct{}
	err    error // why ssh ended; set before done is closed
	closed sync.Once
}

// ErrNoForward is a port that no ssh forward can reach: the engine is not
// reached over ssh.
var ErrNoForward = errors.New("the engine is not reached over ssh, so boxes cannot forward a port to its loopback")

// forwardAttempts is how many local ports Forward tries: one another
// process takes between our pick and ssh's bind is tried again.
const forwardAttempts = 3

// Forward forwards a local loopback port to bind:port on the engine's
// machine, with the same ssh options boxes reaches the engine with (batch
// mode, bounded connect time), and returns once an HTTP request through it
// gets an answer: the ssh connection is up and something answers there.
// The forward lives until Close or the end of ctx.
func (e *Engine) Forward(ctx context.Context, bind string, port int) (engine.Forward, error) {
	if !strings.HasPrefix(e.Endpoint.URL, "ssh://") {
		return nil, &HostError{Host: e.Host, URL: e.Endpoint.URL, Err: ErrNoForward,
			Hint: "bind the box's executor to an address that machine's network reaches (executor: {bind: 0.0.0.0}), or reach the host over ssh://"}
	}
	spec, err := sshspec.ParseURL(e.Endpoint.URL)
	if err != nil {
		return nil, &HostError{Host: e.Host, URL: e.Endpoint.URL, Err: err}
	}
	if bind == "" || bind == "0.0.0.0" {
		bind = "127.0.0.1"
	}
	target := bind
	if strings.Contains(target, ":") {
		target = "[" + target + "]"
	}
	var last error
	for range forwardAttempts {
		local, err := freeLoopbackPort()
		if err != nil {
			return nil, err
		}
		f, err := e.startForward(ctx, spec, local, target, port)
		if err == nil {
			return f, nil
		}
		last = err
		// Only a port taken in the meantime is worth another try.
		if !strings.Contains(err.Error(), "forwarding") && !strings.Contains(err.Error(), "in use") {
			break
		}
	}
	return nil, last
}

func (e *Engine) startForward(ctx context.Context, spec *sshspec.Spec, local int, target string, port int) (*Forward, error) {
	args := append(sshFlags(),
		// The forward is ours alone and ends with our ssh: never handed to
		// (or left behind in) a shared connection of the user's.
		"-o", "ControlMaster=no", "-o", "ControlPath=none",
		// A port ssh cannot bind is a failure, not a session without it.
		"-o", "ExitOnForwardFailure=yes",
		// A connection that died is noticed, and Done says so.
		"-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=3",
		"-N", "-L", fmt.Sprintf("127.0.0.1:%d:%s:%d", local, target, port))
	if spec.User != "" {
		args = append(args, "-l", spec.User)
	}
	if spec.Port != "" {
		args = append(args, "-p", spec.Port)
	}
	args = append(args, "--", spec.Host)
	f := &Forward{
		url:    "http://127.0.0.1:" + strconv.Itoa(local),
		stderr: &lockedBuffer{},
		done:   make(chan struct{}),
	}
	f.cmd = exec.Command("ssh", args...)
	f.cmd.Stdin, f.cmd.Stdout, f.cmd.Stderr = nil, nil, f.stderr
	// Its own process group: a Ctrl-C at the terminal reaches us, and we
	// end ssh ourselves (Close); see also endWithParent.
	f.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	endWithParent(f.cmd.SysProcAttr)
	if err := f.cmd.Start(); err != nil {
		return nil, &HostError{Host: e.Host, URL: e.Endpoint.URL, Err: fmt.Errorf("starting ssh: %w", err), Hint: "the ssh client must be on PATH to forward a port"}
	}
	go func() {
		err := f.cmd.Wait()
		msg := strings.TrimSpace(f.stderr.String())
		switch {
		case msg != "":
			f.err = errors.New(msg)
		case err != nil:
			f.err = fmt.Errorf("ssh: %w", err)
		default:
			f.err = errors.New("ssh ended")
		}
		close(f.done)
	}()
	context.AfterFunc(ctx, func() { f.Close() })
	if err := f.wait(ctx, ConnectTimeout+5*time.Second); err != nil {
		f.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var ended *sshEnded
		if errors.As(err, &ended) {
			// ssh's own words, with the hints for reaching the host.
			return nil, e.Endpoint.explain(context.Background(), 0, ended.err)
		}
		return nil, &HostError{Host: e.Host, URL: e.Endpoint.URL, Err: err,
			Hint: "ssh connected but nothing answers at " + target + ":" + strconv.Itoa(port) + " on that machine: is the box running? (boxes doctor NAME)"}
	}
	return f, nil
}

// sshEnded is the forward's ssh ending before the forward worked.
type sshEnded struct{ err error }

func (e *sshEnded) Error() string { return "the ssh forward: " + e.err.Error() }

// wait returns once an HTTP request through the forward is answered, or
// fails when ssh ends or timeout passes first.
func (f *Forward) wait(ctx context.Context, timeout time.Duration) error {
	err := engine.AwaitAnswer(ctx, f.url+"/", f.done, timeout)
	switch {
	case errors.Is(err, engine.ErrForwardEnded):
		return &sshEnded{f.err}
	case err != nil && ctx.Err() == nil:
		return fmt.Errorf("through the ssh forward: %w", err)
	}
	return err
}

// Done is closed when the forward's ssh has ended; Err says why.
func (f *Forward) Done() <-chan struct{} { return f.done }

// URL is the forwarded port's address here, http://127.0.0.1:PORT.
func (f *Forward) URL() string { return f.url }

// Err is why the forward ended, once Done is closed.
func (f *Forward) Err() error {
	select {
	case <-f.done:
		return f.err
	default:
		return nil
	}
}

// Close ends the forward's ssh and waits for it.
func (f *Forward) Close() error {
	f.closed.Do(func() {
		select {
		case <-f.done:
			return
		default:
		}
		_ = f.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-f.done:
		case <-time.After(3 * time.Second):
			_ = f.cmd.Process.Kill()
			<-f.done
		}
	})
	return nil
}

// freeLoopbackPort is a port nothing listens on on 127.0.0.1 now.
func freeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free local port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// lockedBuffer is a bytes.Buffer safe for ssh's writes and our reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
