package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const testToken = "s3cret-token"

func newTestServer(t *testing.T) (*httptest.Server, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	ts := httptest.NewServer(newHandler(testToken, log.New(&logs, "", 0)))
	t.Cleanup(ts.Close)
	return ts, &logs
}

func post(t *testing.T, url, auth, sid, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func decode(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("decoding the response: %v", err)
	}
	return v
}

const initialize = `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}`

func TestMCPRejectsMissingOrWrongToken(t *testing.T) {
	ts, logs := newTestServer(t)
	for name, auth := range map[string]string{
		"none":   "",
		"wrong":  "Bearer not-the-token",
		"prefix": "Bearer " + testToken[:4],
		"basic":  "Basic " + testToken,
	} {
		t.Run(name, func(t *testing.T) {
			resp := post(t, ts.URL+"/mcp", auth, "", initialize)
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401", resp.StatusCode)
			}
			if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
				t.Errorf("WWW-Authenticate %q, want a Bearer challenge", got)
			}
		})
	}
	if strings.Contains(logs.String(), testToken) {
		t.Errorf("the log shows the token:\n%s", logs)
	}
}

func TestMCPInitializeThenInitialized(t *testing.T) {
	ts, _ := newTestServer(t)
	resp := post(t, ts.URL+"/mcp", "Bearer "+testToken, "", initialize)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatal("no Mcp-Session-Id header")
	}
	v := decode(t, resp)
	if v["jsonrpc"] != "2.0" || v["id"] != float64(7) {
		t.Errorf("envelope %v, want jsonrpc 2.0 and id 7", v)
	}
	result, _ := v["result"].(map[string]any)
	if result["protocolVersion"] != protocolVersion {
		t.Errorf("protocolVersion %v", result["protocolVersion"])
	}
	if info, _ := result["serverInfo"].(map[string]any); info["name"] != "executor-standin" {
		t.Errorf("serverInfo %v", result["serverInfo"])
	}

	resp = post(t, ts.URL+"/mcp", "Bearer "+testToken, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notification: status %d, want 202", resp.StatusCode)
	}
	if b, _ := io.ReadAll(resp.Body); len(b) != 0 {
		t.Errorf("notification: body %q, want none", b)
	}

	resp = post(t, ts.URL+"/mcp", "Bearer "+testToken, "no-such-session", `{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown session: status %d, want 404", resp.StatusCode)
	}
}

func TestMCPErrors(t *testing.T) {
	ts, _ := newTestServer(t)
	for _, tc := range []struct {
		name   string
		body   string
		status int
		code   float64
	}{
		{"parse error", `{"jsonrpc":"2.0","id":1,`, http.StatusBadRequest, codeParseError},
		{"not json", `hello`, http.StatusBadRequest, codeParseError},
		{"unknown method", `{"jsonrpc":"2.0","id":"a","method":"tools/frobnicate"}`, http.StatusOK, codeMethodNotFound},
		{"batch", `[` + initialize + `]`, http.StatusBadRequest, codeInvalidRequest},
		{"wrong version", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, http.StatusBadRequest, codeInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, ts.URL+"/mcp", "Bearer "+testToken, "", tc.body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			v := decode(t, resp)
			e, _ := v["error"].(map[string]any)
			if e["code"] != tc.code {
				t.Errorf("error %v, want code %v", v["error"], tc.code)
			}
			if _, ok := v["id"]; !ok {
				t.Errorf("response has no id: %v", v)
			}
		})
	}
}

func TestHealthzAndDashboard(t *testing.T) {
	ts, logs := newTestServer(t)
	get := func(path string) *http.Response {
		t.Helper()
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	if resp := get("/healthz"); resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz: status %d", resp.StatusCode)
	}
	if resp := get("/"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/ without token: status %d, want 401", resp.StatusCode)
	}
	resp := get("/?token=" + testToken)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/ with token: status %d", resp.StatusCode)
	}
	page, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(page), "Executor stand-in") || strings.Contains(string(page), testToken) {
		t.Errorf("dashboard page:\n%s", page)
	}
	if resp := get("/mcp"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /mcp without token: status %d, want 401", resp.StatusCode)
	}
	if strings.Contains(logs.String(), testToken) {
		t.Errorf("the log shows the token:\n%s", logs)
	}
}

func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "0.0.0.0:4788"},
		{[]string{"web", "--hostname", "0.0.0.0", "--port", "4788", "--allowed-host", "executor"}, "0.0.0.0:4788"},
		{[]string{"--listen", "127.0.0.1:9000"}, "127.0.0.1:9000"},
		{[]string{"daemon", "run", "--port", "5000"}, "0.0.0.0:5000"},
	} {
		c, err := parseArgs(tc.args, io.Discard)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if c.listen != tc.want {
			t.Errorf("%v: listen %q, want %q", tc.args, c.listen, tc.want)
		}
	}
	if _, err := parseArgs([]string{"web", "extra"}, io.Discard); err == nil {
		t.Error("a stray argument was accepted")
	}
}

func TestRefusesEmptyToken(t *testing.T) {
	var stderr bytes.Buffer
	if rc := run([]string{"--listen", "127.0.0.1:0"}, "", io.Discard, &stderr); rc == 0 {
		t.Fatal("started without a token")
	}
	if !strings.Contains(stderr.String(), "EXECUTOR_TOKEN") {
		t.Errorf("message %q does not name EXECUTOR_TOKEN", stderr.String())
	}
}
