package toolstate

import (
	"bytes"
	"io"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"
)

// Finding is a credential a tree holds, named and placed, never shown: a
// file a tool keeps its sign-in in, found by its name, or what looks like
// a key or token, found in a file's bytes.
type Finding struct {
	// Path is the file, slash-separated, in the tree.
	Path string `json:"path"`
	// What it is: "an Anthropic API key", "a value for OPENAI_API_KEY".
	What string `json:"what"`
	// Line is the first line it is on; 0 for a file found by its name, or
	// one that is not text.
	Line int `json:"line,omitempty"`
	// Count is how many times the file holds it.
	Count int `json:"count"`
}

// knownFiles are the names of files that hold credentials, wherever they
// are in the tree.
var knownFiles = map[string]string{
	"auth.json":         "a sign-in file (auth.json: Hermes's and Codex's tokens)",
	".credentials.json": "a sign-in file (.credentials.json: Claude Code's tokens)",
	".env":              "an environment file (.env)",
	"credentials":       "a credentials file",
	"credentials.json":  "a credentials file",
	".netrc":            "a .netrc (passwords for hosts)",
	".git-credentials":  "Git credentials",
	".pypirc":           "a .pypirc (package index passwords)",
	"id_rsa":            "an SSH private key",
	"id_ecdsa":          "an SSH private key",
	"id_ed25519":        "an SSH private key",
	"id_dsa":            "an SSH private key",
}

// knownSuffixes are the endings of names of key files.
var knownSuffixes = map[string]string{
	".pem": "a key or certificate file (.pem)",
	".key": "a key file (.key)",
	".p12": "a key store (.p12)",
	".pfx": "a key store (.pfx)",
}

// byName is what a file named name is, "" when its name says nothing.
func byName(name string) string {
	if what, ok := knownFiles[name]; ok {
		return what
	}
	if strings.HasPrefix(name, ".env.") {
		return "an environment file (" + name + ")"
	}
	for suffix, what := range knownSuffixes {
		if strings.HasSuffix(name, suffix) {
			return what
		}
	}
	return ""
}

// Credentials reads every file of t and lists what it holds that looks
// like a credential, by path then kind: files named as tools and programs
// name their secrets, keys and tokens by their well-known prefixes in any
// file, and values of settings named like secrets (API_KEY, token,
// password…) in configuration files. No value is ever returned.
func (t *Tree) Credentials() ([]Finding, error) {
	root, err := os.OpenRoot(t.Path)
	if err != nil {
		return nil, &ChangedError{Path: t.Shown, Change: "it cannot be opened again: " + reason(err)}
	}
	defer root.Close()
	var out []Finding
	for _, e := range t.Entries {
		if !e.Mode.IsRegular() {
			continue
		}
		if what := byName(path.Base(e.Path)); what != "" {
			out = append(out, Finding{Path: e.Path, What: what, Count: 1})
		}
		f, err := openNoFollow(root, e.Path)
		if err != nil {
			return nil, &ChangedError{Path: at(t.Shown, e.Path), Change: "it cannot be read again: " + reason(err)}
		}
		found, err := scanFile(f, e.Size, isConfig(path.Base(e.Path)))
		f.Close()
		if err != nil {
			return nil, &ChangedError{Path: at(t.Shown, e.Path), Change: "reading it: " + reason(err)}
		}
		for _, x := range found {
			x.Path = e.Path
			out = append(out, x)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Line < out[j].Line
	})
	return out, nil
}

// isConfig reports whether a file named name holds settings, read line by
// line for values of secret-like names.
func isConfig(name string) bool {
	if name == ".env" || strings.HasPrefix(name, ".env.") || strings.HasSuffix(name, ".env") {
		return true
	}
	switch path.Ext(name) {
	case ".json", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".properties":
		return true
	}
	return false
}

// maxConfigBytes bounds the configuration files read line by line; larger
// ones are scanned for tokens only.
const maxConfigBytes = 4 << 20

// chunk is how much of a file is scanned at once; overlap is how much of
// its end is scanned again with the next chunk, so that a token across
// the two is seen whole. No token looked for is longer.
const (
	chunk   = 1 << 20
	overlap = 512
)

// scanFile scans r, size bytes, for tokens, and when config for values of
// secret-like settings too; one Finding per kind, at its first line.
func scanFile(r io.Reader, size int64, config bool) ([]Finding, error) {
	seen := map[string]*Finding{}
	var order []string
	note := func(what string, line int) {
		if f, ok := seen[what]; ok {
			f.Count++
			return
		}
		seen[what] = &Finding{What: what, Line: line, Count: 1}
		order = append(order, what)
	}
	buf := make([]byte, 0, chunk+overlap)
	line, binary, first := 1, false, true
	for {
		n, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		end := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !end {
			return nil, err
		}
		if first {
			binary = bytes.IndexByte(buf[:min(len(buf), 8192)], 0) >= 0
			first = false
		}
		// Tokens starting before limit are looked at now; the rest, with
		// the next chunk.
		limit := len(buf)
		if !end {
			limit -= overlap
		}
		scanTokens(buf, limit, func(what string, at int) {
			l := 0
			if !binary {
				l = line + bytes.Count(buf[:at], []byte{'\n'})
			}
			note(what, l)
		})
		if end {
			break
		}
		line += bytes.Count(buf[:limit], []byte{'\n'})
		buf = buf[:copy(buf, buf[limit:])]
	}
	if config && !binary && size <= maxConfigBytes {
		if err := scanSettings(r, size, note); err != nil {
			return nil, err
		}
	}
	out := make([]Finding, 0, len(order))
	for _, what := range order {
		out = append(out, *seen[what])
	}
	return out, nil
}

// scanSettings reads r, a configuration file of size bytes, again from its
// start, and notes every line that gives a setting named like a secret a
// value that is not a placeholder.
func scanSettings(r io.Reader, size int64, note func(what string, line int)) error {
	s, ok := r.(io.Seeker)
	if !ok {
		return nil
	}
	if _, err := s.Seek(0, io.SeekStart); err != nil {
		return err
	}
	data, err := io.ReadAll(io.LimitReader(r, size))
	if err != nil {
		return err
	}
	for i, l := range bytes.Split(data, []byte{'\n'}) {
		for _, m := range secretSetting.FindAllSubmatch(l, -1) {
			if placeholder(string(m[2])) {
				continue
			}
			note("a value for "+string(m[1]), i+1)
		}
	}
	return nil
}

// secretSetting is a setting whose name says it is a secret, and its
// value: KEY=value, key: value, "key": "value", key = "value".
var secretSetting = regexp.MustCompile(`(?i)(?:^|[\s{,;])["']?([a-z0-9_.-]*(?:api[_-]?key|apikey|token|secret|password|passwd))["']?\s*[:=]\s*["']?([^\s"',;}]+)`)

// placeholder reports whether value is no secret: empty-ish, a reference
// to another variable, or a word a template puts there.
func placeholder(value string) bool {
	if len(value) < 8 {
		return true
	}
	switch value[0] {
	case '$', '<', '{', '[', '%':
		return true
	}
	switch strings.ToLower(value) {
	case "null", "none", "true", "false", "changeme", "required", "optional", "undefined":
		return true
	}
	return false
}

// tokenKinds are what a key or token starts with, what it is, and the
// fewest characters of [A-Za-z0-9_-] that follow in a real one. Several
// share a start: the longest that matches is taken.
var tokenKinds = []struct {
	prefix, what string
	min          int
}{
	{"sk-ant-", "an Anthropic API key", 20},
	{"sk-or-", "an OpenRouter API key", 20},
	{"sk-proj-", "an OpenAI API key", 20},
	{"sk-", "an API key (sk-…)", 20},
	{"ghp_", "a GitHub token", 30},
	{"gho_", "a GitHub token", 30},
	{"ghu_", "a GitHub token", 30},
	{"ghs_", "a GitHub token", 30},
	{"ghr_", "a GitHub token", 30},
	{"github_pat_", "a GitHub token", 30},
	{"glpat-", "a GitLab token", 20},
	{"xoxb-", "a Slack token", 20},
	{"xoxp-", "a Slack token", 20},
	{"xoxa-", "a Slack token", 20},
	{"xoxr-", "a Slack token", 20},
	{"AKIA", "an AWS access key ID", 16},
	{"AIza", "a Google API key", 30},
	{"hf_", "a Hugging Face token", 30},
}

// anchors are the distinct starts searched for: every kind's prefix but
// those a shorter one starts (sk-ant- is found as sk-), the private key
// block and the JSON web token.
var anchors = func() []string {
	out := []string{privateKey, jwtStart}
	for _, k := range tokenKinds {
		covered := false
		for _, o := range tokenKinds {
			if o.prefix != k.prefix && strings.HasPrefix(k.prefix, o.prefix) {
				covered = true
			}
		}
		if !covered {
			out = append(out, k.prefix)
		}
	}
	return out
}()

const (
	privateKey = "-----BEGIN "
	jwtStart   = "eyJ"
)

// scanTokens calls found with what each token of buf that starts before
// limit is, and where it starts.
func scanTokens(buf []byte, limit int, found func(what string, at int)) {
	for _, a := range anchors {
		for from := 0; from < limit; {
			i := bytes.Index(buf[from:], []byte(a))
			if i < 0 || from+i >= limit {
				break
			}
			at := from + i
			from = at + 1
			if what := tokenAt(buf, at, a); what != "" {
				found(what, at)
			}
		}
	}
}

// tokenAt is what the token at buf[at:], which starts with anchor a, is;
// "" when it is none.
func tokenAt(buf []byte, at int, a string) string {
	switch a {
	case privateKey:
		head := buf[at:min(len(buf), at+64)]
		if i := bytes.IndexByte(head, '\n'); i >= 0 {
			head = head[:i]
		}
		if bytes.Contains(head, []byte("PRIVATE KEY-----")) {
			return "a private key"
		}
		return ""
	case jwtStart:
		if at > 0 && tokenByte(buf[at-1]) {
			return ""
		}
		if jwt(buf[at:min(len(buf), at+overlap)]) {
			return "a JSON web token (a sign-in token)"
		}
		return ""
	}
	if at > 0 && tokenByte(buf[at-1]) {
		return ""
	}
	for _, k := range tokenKinds {
		if !bytes.HasPrefix(buf[at:], []byte(k.prefix)) {
			continue
		}
		tail := buf[at+len(k.prefix):]
		n := 0
		for n < len(tail) && n < overlap/2 && tokenByte(tail[n]) {
			n++
		}
		if n >= k.min && mixed(tail[:n]) {
			return k.what
		}
	}
	return ""
}

// jwt reports whether b starts with a JSON web token: three runs of
// base64url, the first two JSON ("eyJ"), joined by dots.
func jwt(b []byte) bool {
	parts := bytes.SplitN(b, []byte{'.'}, 3)
	if len(parts) < 3 || !bytes.HasPrefix(parts[1], []byte(jwtStart)) {
		return false
	}
	for i, p := range parts {
		n := 0
		for n < len(p) && tokenByte(p[n]) {
			n++
		}
		if n < 10 || (i < 2 && n != len(p)) {
			return false
		}
	}
	return true
}

// tokenByte reports whether c can be part of a key or token.
func tokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// mixed reports whether tail has both a letter and a digit, as every key
// generated at random has, and words joined by hyphens do not.
func mixed(tail []byte) bool {
	letter, digit := false, false
	for _, c := range tail {
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			letter = true
		}
	}
	return letter && digit
}
