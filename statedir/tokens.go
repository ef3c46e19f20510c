package statedir

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hermes-box/boxes/compose"
)

// Tokens is the one store of box bearer tokens: .boxes/secrets/NAME.env
// (directory 0700, files 0600), beside boxes.yaml and never inside it.
type Tokens struct{ Dir string }

// TokensBeside is the token store of the boxes.yaml at configPath.
func TokensBeside(configPath string) Tokens {
	return Tokens{Dir: Beside(configPath).Secrets()}
}

// Path is the file holding box name's token.
func (t Tokens) Path(name string) string { return filepath.Join(t.Dir, name+".env") }

// Get returns the stored token of box name; ok is false when there is none.
func (t Tokens) Get(name string) (token string, ok bool, err error) {
	data, err := os.ReadFile(t.Path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, found := strings.CutPrefix(strings.TrimSpace(line), compose.TokenVar+"="); found && v != "" {
			return v, true, nil
		}
	}
	return "", false, fmt.Errorf("%s has no %s line", t.Path(name), compose.TokenVar)
}

// Put stores token for box name, replacing any earlier one atomically.
func (t Tokens) Put(name, token string) error {
	if err := os.MkdirAll(t.Dir, 0o700); err != nil {
		return err
	}
	if err := os.Chmod(t.Dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(t.Dir, "."+name+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := fmt.Fprintf(tmp, "%s=%s\n", compose.TokenVar, token); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), t.Path(name))
}

// Remove forgets the token of a deleted box.
func (t Tokens) Remove(name string) error {
	err := os.Remove(t.Path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

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
