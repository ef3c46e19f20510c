package archive

import (
	"io"

	"filippo.io/age"
)

// WriteFormat2 writes a format 2 archive (zstd), as boxes wrote them before
// format 3, for the tests that read older formats.
func WriteFormat2(w io.Writer, m Manifest, data io.Reader, recipients ...age.Recipient) (Summary, error) {
	sum, _, err := write(w, m, data, compressZstd, recipients)
	return sum, err
}

// LegacyDerivations is how many OpenPGP passphrase keys this process has
// derived (each an iterated S2K, slow by design).
func LegacyDerivations() int64 { return legacyDerivations.Load() }
