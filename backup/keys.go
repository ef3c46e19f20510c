package backup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"filippo.io/age"

	"github.com/hermes-box/boxes/archive"
)

// Keys are the recipients save encrypts to and the identity it verifies
// with: boxes.yaml's archive recipients plus a one-time key that save
// forgets once it has read the archive back, or else a passphrase.
func Keys(recipients []string, passphrase func() (string, error)) ([]age.Recipient, age.Identity, error) {
	if len(recipients) == 0 {
		pass, err := passphrase()
		if err != nil {
			return nil, nil, err
		}
		r, err := archive.PassphraseRecipient(pass)
		if err != nil {
			return nil, nil, err
		}
		id, err := archive.PassphraseIdentity(pass)
		return []age.Recipient{r}, id, err
	}
	var out []age.Recipient
	for _, s := range recipients {
		r, err := age.ParseX25519Recipient(s)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, r)
	}
	once, err := age.GenerateX25519Identity()
	if err != nil {
		return nil, nil, err
	}
	return append(out, once.Recipient()), once, nil
}

// Identities decrypt archive file: for an archive saved to age keys, those
// in identityFile, which must be set; for one saved to a passphrase, the
// passphrase, whether identityFile is set or not; for one whose header does
// not tell, identityFile's when it is set, else the passphrase. The file is
// checked first, so nobody is asked for a passphrase to read what is not
// there, or for one that cannot open it.
func Identities(file, identityFile string, passphrase func() (string, error)) ([]age.Identity, error) {
	if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", file, ErrNoArchive)
	} else if err != nil {
		return nil, err
	}
	if !archive.IsArchiveName(file) {
		return nil, fmt.Errorf("%s: %w", file, ErrNotArchive)
	}
	secret := archive.SecretOf(file)
	if secret == archive.SecretKeys && identityFile == "" {
		return nil, ErrNeedsIdentity
	}
	// The smolvm tool's archives open with a passphrase only.
	if identityFile != "" && !strings.HasSuffix(file, archive.ExtLegacy) && secret != archive.SecretPassphrase {
		f, err := os.Open(identityFile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		ids, err := age.ParseIdentities(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", identityFile, err)
		}
		return ids, nil
	}
	pass, err := passphrase()
	if err != nil {
		return nil, err
	}
	id, err := archive.PassphraseIdentity(pass)
	if err != nil {
		return nil, err
	}
	return []age.Identity{id}, nil
}
