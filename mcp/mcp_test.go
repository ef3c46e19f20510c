package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestInitialize(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("Authorization") {
		case "Bearer good":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocolVersion\":\"2025-06-18\"}}\n\n")
		case "Bearer noversion":
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
		default:
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	if err := Initialize(ctx, srv.URL, "good"); err != nil {
		t.Errorf("with the token: %v", err)
	}
	var status *StatusError
	if err := Initialize(ctx, srv.URL, ""); !errors.As(err, &status) || status.Code != http.StatusUnauthorized {
		t.Errorf("without a token: %v, want 401", err)
	}
	if err := Initialize(ctx, srv.URL, "noversion"); err == nil {
		t.Error("an answer without a protocol version passed")
	}
}
