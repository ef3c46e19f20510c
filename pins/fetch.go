package pins

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Size limits for response bodies. npm's abbreviated documents are small,
// but a registry that ignores the Accept header sends the full document,
// which for @anthropic-ai/claude-code runs to tens of megabytes.
const (
	npmLimit  = 64 << 20
	jsonLimit = 8 << 20
	textLimit = 1 << 20
)

// Media types the registries are asked for.
const (
	acceptNPM       = "application/vnd.npm.install-v1+json"
	acceptGitHub    = "application/vnd.github+json"
	acceptGitHubSHA = "application/vnd.github.sha"
)

// statusError is a response whose status is not 200 OK.
type statusError struct {
	url     string
	status  string // e.g. "404 Not Found"
	code    int
	message string // the server's own explanation, if it gave one
}

func (e *statusError) Error() string {
	msg := fmt.Sprintf("GET %s: %s", e.url, e.status)
	if e.message != "" {
		msg += ": " + e.message
	}
	return msg
}

// get fetches url and returns its body, at most limit bytes of it; any
// status but 200 is a *statusError.
func (r *Resolver) get(ctx context.Context, url, accept string, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", accept)
	if r.UserAgent != "" {
		req.Header.Set("User-Agent", r.UserAgent)
	}
	client := r.Client
	if client == nil {
		client = defaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		head, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return nil, &statusError{url: url, status: resp.Status, code: resp.StatusCode, message: serverMessage(head)}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: reading the response: %w", url, err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("GET %s: response is larger than %d bytes", url, limit)
	}
	return body, nil
}

// getJSON fetches url and decodes its JSON body into v.
func (r *Resolver) getJSON(ctx context.Context, url, accept string, limit int64, v any) error {
	body, err := r.get(ctx, url, accept, limit)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: malformed JSON: %w", url, err)
	}
	return nil
}

// serverMessage picks the explanation out of an error body: GitHub's
// {"message": …}, npm's {"error": …}, or nothing.
func serverMessage(body []byte) string {
	var doc struct {
		Message string `json:"message"`
		Error   string `json:"error"`
	}
	if json.Unmarshal(body, &doc) != nil {
		return ""
	}
	msg := doc.Message
	if msg == "" {
		msg = doc.Error
	}
	msg = strings.Join(strings.Fields(msg), " ")
	if r := []rune(msg); len(r) > 200 {
		msg = string(r[:200]) + "…"
	}
	return msg
}
