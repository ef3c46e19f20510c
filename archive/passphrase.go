package archive

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"filippo.io/age"
)

// ScryptWorkFactor is the log2 scrypt work factor PassphraseRecipient uses.
// Zero means age's default. Tests lower it to run fast; real archives should
// keep the default.
var ScryptWorkFactor = 0

// PassphraseRecipient returns an age recipient that encrypts with passphrase p.
// The file keys it wraps are remembered for PassphraseIdentity of the same
// passphrase: save's read-back of its own archive derives no key again.
func PassphraseRecipient(p string) (age.Recipient, error) {
	r, err := age.NewScryptRecipient(p)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	if ScryptWorkFactor > 0 {
		r.SetWorkFactor(ScryptWorkFactor)
	}
	return &passphraseRecipient{ScryptRecipient: r, passphrase: p}, nil
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

// Unwrap is age's, once per archive header in a process: the scrypt
// derivation takes most of a second by design, and one load reads its
// archive three times (manifest, whole check, restore). The memo is keyed
// by the passphrase and the stanza together, so another passphrase never
// gets a remembered key, and age still checks the header's MAC with it.
func (i *passphraseIdentity) Unwrap(stanzas []*age.Stanza) ([]byte, error) {
	key := stanzaKey(i.passphrase, stanzas)
	if k, ok := fileKeys.Load(key); ok {
		return bytes.Clone(k.([]byte)), nil
	}
	k, err := i.ScryptIdentity.Unwrap(stanzas)
	if err != nil {
		return nil, err
	}
	fileKeys.Store(key, bytes.Clone(k))
	return k, nil
}

// passphraseRecipient is age's scrypt recipient that remembers the file
// keys it wraps (see passphraseIdentity.Unwrap).
type passphraseRecipient struct {
	*age.ScryptRecipient
	passphrase string
}

// WrapWithLabels is what age.Encrypt calls on a scrypt recipient (it must
// be the only one, which its label enforces).
func (r *passphraseRecipient) WrapWithLabels(fileKey []byte) ([]*age.Stanza, []string, error) {
	s, labels, err := r.ScryptRecipient.WrapWithLabels(fileKey)
	if err == nil {
		fileKeys.Store(stanzaKey(r.passphrase, s), bytes.Clone(fileKey))
	}
	return s, labels, err
}

// fileKeys are the keys this process has derived from a passphrase: the
// file keys of the age headers it opened or wrote (by stanzaKey), and the
// session keys of the smolvm tool's OpenPGP archives (by passphrase and session-key packet).
var fileKeys sync.Map

// stanzaKey is a digest of passphrase p and the stanzas, each field
// length-prefixed.
func stanzaKey(p string, stanzas []*age.Stanza) [sha256.Size]byte {
	count := func(n int) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }
	fields := [][]byte{[]byte(p), count(len(stanzas))}
	for _, s := range stanzas {
		fields = append(fields, []byte(s.Type), count(len(s.Args)))
		for _, a := range s.Args {
			fields = append(fields, []byte(a))
		}
		fields = append(fields, s.Body)
	}
	return keyDigest(fields...)
}

// keyDigest is a digest of fields, each length-prefixed: the key under
// which fileKeys remembers a derived key.
func keyDigest(fields ...[]byte) [sha256.Size]byte {
	h := sha256.New()
	for _, b := range fields {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(b))))
		h.Write(b)
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
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

// Secret is what the header of an archive says opens it.
type Secret int

const (
	// SecretUnknown: not an age file (the smolvm tool's archives, which a
	// passphrase opens), or one whose header does not read.
	SecretUnknown Secret = iota
	// SecretPassphrase: a passphrase (age's scrypt stanza).
	SecretPassphrase
	// SecretKeys: age keys, boxes.yaml's archive.recipients or a move's
	// one-time key.
	SecretKeys
)

// SecretOf tells, by its header alone, what opens the archive at path: so
// that a reader asks for the secret the archive needs. Anything it cannot
// tell is SecretUnknown, which the reader tells apart as it opens the file;
// so is what is not a regular file (a named pipe is not even opened:
// its reader is the one that reads it).
func SecretOf(path string) Secret {
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		return SecretUnknown
	}
	f, err := os.Open(path)
	if err != nil {
		return SecretUnknown
	}
	defer f.Close()
	_, err = age.Decrypt(io.LimitReader(f, 1<<20), stanzaTypes{})
	var noMatch *age.NoIdentityMatchError
	switch {
	case !errors.As(err, &noMatch) || len(noMatch.StanzaTypes) == 0:
		return SecretUnknown
	case slices.Contains(noMatch.StanzaTypes, "scrypt"):
		return SecretPassphrase
	}
	return SecretKeys
}

// stanzaTypes is an identity that matches no stanza: age's refusal then
// lists the header's stanza types.
type stanzaTypes struct{}

func (stanzaTypes) Unwrap([]*age.Stanza) ([]byte, error) { return nil, age.ErrIncorrectIdentity }
