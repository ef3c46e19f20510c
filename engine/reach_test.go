package engine

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// AwaitAnswer takes any answer, says a forward that ended as
// ErrForwardEnded, and gives up after its timeout with the last error.
func TestAwaitAnswer(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusUnauthorized) }))
	defer srv.Close()
	if err := AwaitAnswer(ctx, srv.URL+"/", make(chan struct{}), time.Second); err != nil {
		t.Errorf("a 401 is an answer: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := "http://" + l.Addr().String() + "/"
	l.Close()
	ended := make(chan struct{})
	close(ended)
	if err := AwaitAnswer(ctx, nobody, ended, time.Minute); !errors.Is(err, ErrForwardEnded) {
		t.Errorf("an ended forward: %v", err)
	}
	err = AwaitAnswer(ctx, nobody, make(chan struct{}), 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "nothing answered within 300ms") {
		t.Errorf("nobody listening: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := AwaitAnswer(cctx, nobody, make(chan struct{}), time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled context: %v", err)
	}
}
