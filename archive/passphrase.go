package archive

import (
	"fmt"

	"filippo.io/age"
)

// ScryptWorkFactor is the log2 scrypt work factor PassphraseRecipient uses.
// Zero means age's default. Tests lower it to run fast; real archives should
// keep the default.
var ScryptWorkFactor = 0

// PassphraseRecipient returns an age recipient that encrypts with passphrase p.
func PassphraseRecipient(p string) (age.Recipient, error) {
	r, err := age.NewScryptRecipient(p)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	if ScryptWorkFactor > 0 {
		r.SetWorkFactor(ScryptWorkFactor)
	}
	return r, nil
}

// PassphraseIdentity returns an age identity that decrypts with passphrase p;
// readers in this package also open the smolvm tool's archives with it.
func PassphraseIdentity(p string) (age.Identity, error) {
	id, err := age.NewScryptIdentity(p)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	return &passphraseIdentity{ScryptIdentity: id, passphrase: p}, nil
}

// passphraseIdentity is age's scrypt identity that also remembers its
// passphrase, so that the same identity opens the smolvm tool's OpenPGP
// archives.
type passphraseIdentity struct {
	*age.ScryptIdentity
	passphrase string
}

// passphraseOf returns the passphrase of the first PassphraseIdentity in
// ids, or nil if there is none.
func passphraseOf(ids []age.Identity) []byte {
	for _, id := range ids {
		if p, ok := id.(*passphraseIdentity); ok {
			return []byte(p.passphrase)
		}
	}
	return nil
}
