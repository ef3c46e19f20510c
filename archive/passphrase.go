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

// PassphraseIdentity returns an age identity that decrypts with passphrase p.
func PassphraseIdentity(p string) (age.Identity, error) {
	id, err := age.NewScryptIdentity(p)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	return id, nil
}
