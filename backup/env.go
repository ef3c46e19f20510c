package backup

import (
	"fmt"
	"os"
	"strings"
)

// The environment variables that hold what encrypts and decrypts archives.
const (
	// EnvPassphrase holds the archive passphrase for scripts; without it
	// boxes asks on the terminal.
	EnvPassphrase = "BOXES_PASSPHRASE"
	// EnvIdentity names an age identity file, for archives saved to
	// boxes.yaml's archive.recipients.
	EnvIdentity = "BOXES_IDENTITY"
	// The smolvm tool's passphrase variables, read after EnvPassphrase.
	EnvOldPassphrase     = "BOX_PASSPHRASE"
	EnvOldPassphraseFile = "BOX_PASSPHRASE_FILE"
)

// ExtractReserve is the free space Extract leaves on the target's file
// system: an archive that would take it lower is stopped and its files
// removed.
const ExtractReserve = 256 << 20

// PassphraseFromEnv is the passphrase the environment gives: EnvPassphrase,
// else the smolvm tool's EnvOldPassphrase or the first line of the file
// EnvOldPassphraseFile names; "" when none is set.
func PassphraseFromEnv() (string, error) {
	for _, name := range []string{EnvPassphrase, EnvOldPassphrase} {
		if p := os.Getenv(name); p != "" {
			return p, nil
		}
	}
	path := os.Getenv(EnvOldPassphraseFile)
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", EnvOldPassphraseFile, err)
	}
	p, _, _ := strings.Cut(string(b), "\n")
	if p = strings.TrimRight(p, "\r"); p == "" {
		return "", fmt.Errorf("%s: %s holds no passphrase", EnvOldPassphraseFile, path)
	}
	return p, nil
}
