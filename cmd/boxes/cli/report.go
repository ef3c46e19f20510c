package cli

import (
	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/internal/hint"
)

// wrongPassphrase is the hint of archive's wrong passphrase, which knows
// nothing of the variables boxes reads keys from.
var wrongPassphrase = hint.Known{Err: archive.ErrWrongPassphrase, Hint: "check " + backup.EnvPassphrase + ", or " + backup.EnvIdentity + " for an archive saved to age recipients"}
