package spec

import (
	"regexp"
	"strings"
	"testing"
)

// from: cmd:COMMAND keeps the command as written, to be run where boxes
// runs; a command that is empty or not one line is refused at its place,
// without quoting it.
func TestCredentialFromCommand(t *testing.T) {
	for _, from := range []string{
		`"cmd:gh auth token"`,
		`'cmd: gh auth token | tr -d "\r"'`,
		`"cmd:sh ./token.sh"`,
		`'cmd:printf %s "$TOKEN"'`,
		"\"cmd:security find-generic-password -w\\t-s anthropic\"",
	} {
		src := "version: 1\nboxes:\n  a:\n    credentials:\n      x: {to: api.x.com, header: x-api-key, from: " + from + "}\n"
		cfg, err := Parse("boxes.yaml", []byte(src))
		if err != nil {
			t.Errorf("from: %s: %v", from, err)
			continue
		}
		if got := cfg.Boxes[0].Credentials[0].From; !strings.HasPrefix(got, "cmd:") || len(got) < len("cmd:x") {
			t.Errorf("from: %s read as %q", from, got)
		}
	}
	cred := func(from string) string {
		return "version: 1\nboxes:\n  a:\n    credentials:\n      x: {to: api.x.com, header: x-api-key, from: " + from + "}\n"
	}
	for _, tc := range []struct {
		name, from, msg, hint string
	}{
		{"empty", `"cmd:"`, "credential x: from: cmd: needs a command", `from: "cmd:gh auth token"`},
		{"blank", `"cmd:   "`, "credential x: from: cmd: needs a command", "sh -c"},
		{"two lines", `"cmd:echo sk-one\necho two"`, "credential x: from: cmd: is one line, with no control character", "cmd:sh ./token.sh"},
		{"escape", `"cmd:echo sk-\u001b[2J"`, "from: cmd: is one line, with no control character", ""},
		{"upper case", `"CMD:sk-print"`, "from: is env:NAME, file:PATH or cmd:COMMAND", "cmd:COMMAND a command's output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := firstError(t, cred(tc.from), 5, 51, tc.msg, tc.hint)
			if text := errs.Error() + strings.Join(errs.HintLines(), ""); strings.Contains(text, "sk-") {
				t.Errorf("a message quotes the command: %s", text)
			}
		})
	}
}

// The schema's credential from: pattern takes what the parser takes.
func TestCredentialFromSchemaPattern(t *testing.T) {
	pattern := regexp.MustCompile(credentialFromPattern)
	for _, from := range []string{
		"env:GH_TOKEN", "env:1X", "env:", "file:~/.config/gh/token", "file:",
		"cmd:gh auth token", "cmd: gh", "cmd:", "cmd:   ", "cmd:\t", "cmd:a\tb", "cmd:a\nb", "cmd:a\x7fb", "cmd:\x1b", "token", "CMD:gh",
	} {
		src := "version: 1\nboxes:\n  a:\n    credentials:\n      x: {to: api.x.com, header: x-api-key, from: " + strconvQuote(from) + "}\n"
		_, err := Parse("boxes.yaml", []byte(src))
		if parsed := err == nil; parsed != pattern.MatchString(from) {
			t.Errorf("%q: the parser takes it %v, the schema %v (%v)", from, parsed, pattern.MatchString(from), err)
		}
	}
}

// strconvQuote is s as a YAML double-quoted scalar.
func strconvQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteString(`\` + string(r))
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x`)
			b.WriteString(strings.ToUpper(string("0123456789abcdef"[r>>4]) + string("0123456789abcdef"[r&15])))
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
