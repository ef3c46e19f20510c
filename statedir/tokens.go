package statedir

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"github.com/hermes-box/boxes/compose"
)

// Tokens is the one store of box bearer tokens: .boxes/secrets/NAME.env
// (directory 0700, files 0600), beside boxes.yaml and never inside it.
type Tokens struct{ Dir string }

var tokenKind = kind{
	name: "token file",
	ext:  ".env",
	stake: func(box string) string {
		return fmt.Sprintf("%s's token", box)
	},
	fix: func(box string) string {
		return fmt.Sprintf("remove the file: boxes plan recovers %[1]s's token from its containers, or boxes apply gives %[1]s a new one", box)
	},
}

func (t Tokens) records() store { return store{dir: t.Dir, kind: tokenKind} }

// Path is the file holding box name's token.
func (t Tokens) Path(name string) string { return t.records().path(name) }

// Get returns the stored token of box name; ok is false when there is none.
func (t Tokens) Get(name string) (token string, ok bool, err error) {
	recs := t.records()
	data, ok, err := recs.read(name)
	if !ok || err != nil {
		return "", false, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, found := strings.CutPrefix(strings.TrimSpace(line), compose.TokenVar+"="); found && v != "" {
			return v, true, nil
		}
	}
	return "", false, recs.bad(name, false, fmt.Errorf("it has no %s= line", compose.TokenVar))
}

// Put stores token for box name, replacing any earlier one atomically and
// durably; the directory gets its mode 0700 back.
func (t Tokens) Put(name, token string) error {
	if err := os.MkdirAll(t.Dir, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(t.Dir, 0o700); err != nil {
		return err
	}
	return t.records().write(name, []byte(compose.TokenVar+"="+token))
}

// Keep stores token for box name as Put does, unless the file holds it
// already, private (mode 0600): a lease of a box this directory made
// writes nothing, where Put syncs a file and its directory, milliseconds
// on some disks. The directory gets its mode 0700 back either way.
func (t Tokens) Keep(name, token string) error {
	if fi, err := os.Lstat(t.Path(name)); err == nil && fi.Mode() == 0o600 {
		if stored, ok, err := t.Get(name); err == nil && ok && stored == token {
			return os.Chmod(t.Dir, 0o700)
		}
	}
	return t.Put(name, token)
}

// Remove forgets the token of a deleted box; a missing one is no error.
func (t Tokens) Remove(name string) error { return t.records().remove(name) }

// NewToken mints a random bearer token: 32 bytes from crypto/rand, hex.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// TokenFromEnv finds the token in a container's environment.
func TokenFromEnv(env []string) (string, bool) {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, compose.TokenVar+"="); ok && v != "" {
			return v, true
		}
	}
	return "", false
}
