// Package handoff gives a secret URL to a browser without putting it on any
// command line: the browser is started with a one-time loopback address that
// answers its first request with a redirect to the secret URL, and nothing
// after that.
package handoff

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// ErrNotFetched is returned by Wait when no one fetched the address in time.
var ErrNotFetched = errors.New("the browser did not open the one-time address")

// Handoff is one pending redirect.
type Handoff struct {
	// URL is the one-time address to give to the browser. It holds a random
	// path, not the secret.
	URL string

	srv     *http.Server
	ln      net.Listener
	path    string
	target  string
	once    sync.Once
	fetched chan struct{}
}

// New listens on a loopback port for one request to a random path, which is
// redirected to target.
func New(target string) (*Handoff, error) {
	nonce := make([]byte, 24)
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening on loopback for the browser: %w", err)
	}
	h := &Handoff{ln: ln, path: "/" + hex.EncodeToString(nonce), target: target, fetched: make(chan struct{})}
	h.URL = "http://" + ln.Addr().String() + h.path
	h.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go h.srv.Serve(ln) //nolint:errcheck // ends with ErrServerClosed on Close
	return h, nil
}

func (h *Handoff) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	served := false
	if r.URL.Path == h.path && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		h.once.Do(func() {
			served = true
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("Referrer-Policy", "no-referrer")
			http.Redirect(w, r, h.target, http.StatusFound)
			close(h.fetched)
		})
	}
	if !served {
		http.NotFound(w, r)
	}
}

// Wait returns once the address was fetched, or ErrNotFetched after timeout
// or when ctx ends.
func (h *Handoff) Wait(ctx context.Context, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-h.fetched:
		return nil
	case <-t.C:
		return ErrNotFetched
	case <-ctx.Done():
		return ErrNotFetched
	}
}

// Close stops listening; the address answers nothing after it.
func (h *Handoff) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return h.srv.Shutdown(ctx)
}
