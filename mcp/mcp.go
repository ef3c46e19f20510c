// Package mcp is the client side of the MCP handshake boxes checks a box's
// Executor with: one initialize over Streamable HTTP.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Initialize sends one MCP initialize over Streamable HTTP to url with the
// bearer token and checks the JSON-RPC answer carries a protocol version.
func Initialize(ctx context.Context, url, token string) error {
	body := Request
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewBufferString(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return &StatusError{Code: resp.StatusCode}
	}
	return CheckAnswer(data)
}

// Request is the initialize request Initialize sends, for callers that send
// it another way (from inside a box's network).
const Request = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"boxes","version":"1"}}}`

// CheckAnswer checks a 200 answer's body (JSON or an event stream) to
// initialize: JSON-RPC 2.0 with a protocol version.
func CheckAnswer(body []byte) error {
	var answer struct {
		JSONRPC string `json:"jsonrpc"`
		Result  struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if err := json.Unmarshal(sseData(body), &answer); err != nil {
		return fmt.Errorf("initialize answer is not JSON-RPC: %w", err)
	}
	if answer.JSONRPC != "2.0" || answer.Result.ProtocolVersion == "" {
		return fmt.Errorf("initialize answer has no protocol version")
	}
	return nil
}

// StatusError is an HTTP answer other than 200.
type StatusError struct{ Code int }

func (e *StatusError) Error() string {
	return fmt.Sprintf("HTTP %d %s", e.Code, http.StatusText(e.Code))
}

// sseData returns the first data: payload of a text/event-stream body, or the body as it is.
func sseData(b []byte) []byte {
	for _, line := range bytes.Split(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:")); ok {
			return bytes.TrimSpace(rest)
		}
	}
	return b
}
