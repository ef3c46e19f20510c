package main

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"log"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// protocolVersion is the MCP revision the stand-in speaks.
const protocolVersion = "2025-06-18"

// maxBody bounds a JSON-RPC request; handshakes are a few hundred bytes.
const maxBody = 1 << 20

// JSON-RPC error codes.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
)

type server struct {
	tokenSum [sha256.Size]byte
	log      *log.Logger
	started  time.Time
	requests atomic.Int64

	mu       sync.Mutex
	sessions map[string]time.Time
}

func newHandler(token string, logger *log.Logger) http.Handler {
	s := &server{
		tokenSum: sha256.Sum256([]byte(token)),
		log:      logger,
		started:  time.Now(),
		sessions: map[string]time.Time{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", s.mcp)
	mux.HandleFunc("/healthz", s.healthz)
	mux.HandleFunc("/{$}", s.dashboard)
	return s.logged(mux)
}

// statusRecorder remembers the status code for the request log line.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// logged writes one line per request. It logs the path only, never the query
// (the dashboard takes the token as ?token=) nor any header.
func (s *server) logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		s.log.Printf("%s %s %d %s from %s", r.Method, r.URL.Path, rec.status,
			time.Since(start).Round(time.Microsecond), r.RemoteAddr)
	})
}

// authorized compares the presented token with the box's in constant time
// (both are hashed first, so not even the length leaks).
func (s *server) authorized(presented string) bool {
	sum := sha256.Sum256([]byte(presented))
	return presented != "" && subtle.ConstantTimeCompare(sum[:], s.tokenSum[:]) == 1
}

func bearer(r *http.Request) string {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, "ok\n")
}

// rpcMessage is any JSON-RPC 2.0 message a client may send.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

func (s *server) mcp(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(bearer(r)) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="executor"`)
		http.Error(w, "unauthorized: a valid bearer token is required", http.StatusUnauthorized)
		return
	}
	switch r.Method {
	case http.MethodPost:
		s.post(w, r)
	case http.MethodDelete:
		s.mu.Lock()
		_, ok := s.sessions[r.Header.Get("Mcp-Session-Id")]
		delete(s.sessions, r.Header.Get("Mcp-Session-Id"))
		s.mu.Unlock()
		if !ok {
			http.Error(w, "unknown session", http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		// No server-initiated SSE stream is offered, which the spec
		// answers with 405 on GET.
		w.Header().Set("Allow", "POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (s *server) post(w http.ResponseWriter, r *http.Request) {
	if accept := r.Header.Get("Accept"); accept != "" &&
		!strings.Contains(accept, "application/json") && !strings.Contains(accept, "*/*") {
		http.Error(w, "client must accept application/json", http.StatusNotAcceptable)
		return
	}
	if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
		s.mu.Lock()
		_, ok := s.sessions[sid]
		s.mu.Unlock()
		if !ok {
			http.Error(w, "unknown session", http.StatusNotFound)
			return
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeRPC(w, http.StatusRequestEntityTooLarge, nil, rpcResponse{
			ID: json.RawMessage("null"), Error: &rpcError{codeInvalidRequest, "request too large"}})
		return
	}
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		// Batches were removed from MCP in 2025-06-18.
		writeRPC(w, http.StatusBadRequest, nil, rpcResponse{
			ID: json.RawMessage("null"), Error: &rpcError{codeInvalidRequest, "batches are not supported"}})
		return
	}
	var msg rpcMessage
	if err := json.Unmarshal(body, &msg); err != nil {
		writeRPC(w, http.StatusBadRequest, nil, rpcResponse{
			ID: json.RawMessage("null"), Error: &rpcError{codeParseError, "Parse error"}})
		return
	}
	if msg.JSONRPC != "2.0" {
		writeRPC(w, http.StatusBadRequest, nil, rpcResponse{
			ID: idOrNull(msg.ID), Error: &rpcError{codeInvalidRequest, `jsonrpc must be "2.0"`}})
		return
	}
	if len(msg.ID) == 0 || msg.Method == "" {
		// A notification, or a response to a server request: accepted,
		// nothing to answer.
		w.WriteHeader(http.StatusAccepted)
		return
	}

	var (
		header = http.Header{}
		resp   = rpcResponse{ID: msg.ID}
	)
	switch msg.Method {
	case "initialize":
		sid, err := newSessionID()
		if err != nil {
			http.Error(w, "cannot create a session", http.StatusInternalServerError)
			return
		}
		s.mu.Lock()
		s.sessions[sid] = time.Now()
		s.mu.Unlock()
		header.Set("Mcp-Session-Id", sid)
		resp.Result = map[string]any{
			"protocolVersion": protocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "executor-standin", "version": version},
		}
	case "ping":
		resp.Result = map[string]any{}
	case "tools/list":
		resp.Result = map[string]any{"tools": []any{}}
	default:
		resp.Error = &rpcError{codeMethodNotFound, "Method not found: " + msg.Method}
	}
	writeRPC(w, http.StatusOK, header, resp)
}

func idOrNull(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return json.RawMessage("null")
	}
	return id
}

func writeRPC(w http.ResponseWriter, status int, header http.Header, resp rpcResponse) {
	for k, v := range header {
		w.Header()[k] = v
	}
	resp.JSONRPC = "2.0"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(resp)
}

func newSessionID() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

var dashboardPage = template.Must(template.New("dashboard").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Executor stand-in</title>
<style>body{font-family:system-ui,sans-serif;margin:2rem;max-width:40rem}code{background:#eee;padding:0 .2rem}</style>
</head><body>
<h1>Executor stand-in</h1>
<p>Test-only replacement for Executor {{.Version}}. MCP endpoint: <code>/mcp</code> (Streamable HTTP, protocol {{.Protocol}}).</p>
<ul><li>Up since {{.Started}}</li><li>Open MCP sessions: {{.Sessions}}</li><li>Requests served: {{.Requests}}</li></ul>
</body></html>
`))

var deniedPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Executor stand-in</title></head><body>
<h1>Unauthorized</h1><p>Open this page with <code>?token=</code> and the box's token, or send it as a bearer token.</p>
</body></html>
`

// dashboard is token-gated like /mcp; a browser cannot set headers, so the
// token may also come as ?token= (what `boxes open` hands the browser).
func (s *server) dashboard(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// The URL carries the token: keep it out of the Referer of any link.
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Cache-Control", "no-store")
	token := r.URL.Query().Get("token")
	if token == "" {
		token = bearer(r)
	}
	if !s.authorized(token) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="executor"`)
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, deniedPage)
		return
	}
	s.mu.Lock()
	n := len(s.sessions)
	s.mu.Unlock()
	err := dashboardPage.Execute(w, map[string]any{
		"Version":  version,
		"Protocol": protocolVersion,
		"Started":  s.started.UTC().Format(time.RFC3339),
		"Sessions": n,
		"Requests": s.requests.Load(),
	})
	if err != nil {
		s.log.Print(fmt.Errorf("rendering the dashboard: %w", err))
	}
}
