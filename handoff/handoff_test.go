package handoff

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func noFollow() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func TestRedirectsOnceToTheTarget(t *testing.T) {
	target := "http://127.0.0.1:4788/?token=secret"
	h, err := New(target)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if strings.Contains(h.URL, "secret") || !strings.HasPrefix(h.URL, "http://127.0.0.1:") {
		t.Fatalf("one-time URL %q", h.URL)
	}
	c := noFollow()
	// A wrong path is not the handoff, and does not use it up.
	if resp, err := c.Get(strings.TrimRight(h.URL, "0123456789abcdef") + "x"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("wrong path: %v %v", resp, err)
	}
	resp, err := c.Get(h.URL)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != target || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("first fetch: %d %q %q", resp.StatusCode, resp.Header.Get("Location"), resp.Header.Get("Cache-Control"))
	}
	if err := h.Wait(context.Background(), time.Second); err != nil {
		t.Fatalf("Wait after the fetch: %v", err)
	}
	resp, err = c.Get(h.URL)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Location") != "" {
		t.Fatalf("second fetch gave %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

func TestWaitTimesOutWhenNotFetched(t *testing.T) {
	h, err := New("http://127.0.0.1:1/")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Wait(context.Background(), 50*time.Millisecond); !errors.Is(err, ErrNotFetched) {
		t.Fatalf("Wait: %v", err)
	}
	h.Close()
	if _, err := noFollow().Get(h.URL); err == nil {
		t.Fatal("the address still answers after Close")
	}
}
