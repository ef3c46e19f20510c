package docker

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/docker/docker/client"
)

// Unreachable reports whether err says the engine could not be reached or
// went away in the middle of a request (stopped, crashed, the connection or
// the ssh session to it lost), as opposed to an engine that answered with
// an error.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	var he *HostError
	if errors.As(err, &he) {
		return true
	}
	if client.IsErrConnectionFailed(err) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	// Compose does not always wrap what the client returned.
	msg := err.Error()
	for _, s := range []string{"Cannot connect to the Docker daemon", "error during connect", "connection refused", "connection reset by peer", "broken pipe"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// engineGone reports whether err came from a request to the engine that
// could not reach it. Unlike Unreachable it never matches an error of some
// other connection (an executor port that refuses while it starts).
func engineGone(err error) bool {
	var he *HostError
	return client.IsErrConnectionFailed(err) || errors.As(err, &he)
}

// lost names the host in err when it says the engine could not be reached,
// so that an apply's summary says which engine went away; other errors come
// back as they are.
func (e *Engine) lost(err error) error {
	if err == nil || !Unreachable(err) {
		return err
	}
	var he *HostError
	if errors.As(err, &he) {
		return err
	}
	return &HostError{Host: e.Host, URL: e.Endpoint.URL, Err: fmt.Errorf("the engine stopped answering: %w", err),
		Hint: "check that the engine is running there; the next apply resumes where this one stopped"}
}
