package toolstate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Made at run time, so that no file of the repository looks like it
// holds a key.
var (
	anthropicKey = "sk-" + "ant-api03-" + strings.Repeat("Ab3x", 12)
	routerKey    = "sk-" + "or-v1-" + strings.Repeat("9f2e", 12)
	githubToken  = "gh" + "p_" + strings.Repeat("aZ09", 10)
	webToken     = "ey" + "JhbGciOiJIUzI1NiJ9.ey" + "JzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
	keyBlock     = "-----BEGIN " + "OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"
)

// Credentials names each file that holds one and what it holds, at its
// first line and how often, and never its value; placeholders, words and
// hyphenated names are no credentials.
func TestCredentials(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		".env":                  "# keys\nOPENROUTER_API_KEY=" + routerKey + "\nEMPTY_TOKEN=\nHOME_DIR=/data\n",
		"auth.json":             `{"providers": {}}`,
		".credentials.json":     `{}`,
		"config.yaml":           "model: anthropic/claude\napi_key: ${ANTHROPIC_API_KEY}\nmax_tokens: 4096\nsession_token: 'abcd1234efgh'\n",
		"sessions/chat.jsonl":   `{"text": "use the task-management-is-not-a-key-at-all-really tool"}` + "\n" + `{"text": "my key is ` + anthropicKey + `"}` + "\n" + `{"again": "` + anthropicKey + `"}` + "\n",
		"skills/notes.md":       "risk-free words, desk-lamp-and-other-things-with-hyphens, sk-not-a-key\n",
		"tokens/cache.bin":      "\x00\x01binary " + githubToken + "\x00",
		"keys/deploy":           keyBlock,
		"logs/auth.log":         "line\nline\nAuthorization: Bearer " + webToken + "\n",
		"logs/notakey.log":      "eyJ is how base64 JSON starts, and ghp_short is too short\n",
		"settings/client.toml":  "password = \"hunter2hunter2\"\ntoken = \"changeme\"\n",
		"settings/tls/cert.pem": "not read for its name only",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tree, err := Check(dir, "state", DefaultMaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	found, err := tree.Credentials()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range found {
		got = append(got, fmt.Sprintf("%s:%d: %s (%d)", f.Path, f.Line, f.What, f.Count))
	}
	want := []string{
		".credentials.json:0: a sign-in file (.credentials.json: Claude Code's tokens) (1)",
		".env:0: an environment file (.env) (1)",
		".env:2: an OpenRouter API key (1)",
		".env:2: a value for OPENROUTER_API_KEY (1)",
		"auth.json:0: a sign-in file (auth.json: Hermes's and Codex's tokens) (1)",
		"config.yaml:4: a value for session_token (1)",
		"keys/deploy:1: a private key (1)",
		"logs/auth.log:3: a JSON web token (a sign-in token) (1)",
		"sessions/chat.jsonl:2: an Anthropic API key (2)",
		"settings/client.toml:1: a value for password (1)",
		"settings/tls/cert.pem:0: a key or certificate file (.pem) (1)",
		"tokens/cache.bin:0: a GitHub token (1)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	doc, err := json.Marshal(found)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{anthropicKey, routerKey, githubToken, webToken, "b3BlbnNzaC1rZXktdjEAAAAA", "hunter2", "abcd1234efgh", "Ab3x", "9f2e"} {
		if strings.Contains(string(doc), secret) {
			t.Errorf("the findings show %q: %s", secret, doc)
		}
	}
}

// A key across two chunks of a large file is found once, on its line.
func TestCredentialsAcrossChunks(t *testing.T) {
	dir := t.TempDir()
	for _, at := range []int{chunk - overlap - 10, chunk - 20, chunk + 5, 3*chunk - overlap + 1} {
		lines := strings.Repeat("x\n", at/2)
		content := lines + anthropicKey + "\n" + strings.Repeat("y", chunk)
		if err := os.WriteFile(filepath.Join(dir, "big.log"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		tree, err := Check(dir, "state", DefaultMaxBytes)
		if err != nil {
			t.Fatal(err)
		}
		found, err := tree.Credentials()
		if err != nil || len(found) != 1 || found[0].Line != at/2+1 || found[0].Count != 1 || found[0].What != "an Anthropic API key" {
			t.Errorf("a key at byte %d: %+v %v", at, found, err)
		}
	}
}
