// Package backup saves a box's /data to an archive and restores one into a
// new box (load, and boxes created with restore:), over a narrow engine
// interface (engine.Inside). Archives themselves are package archive's.
package backup

import (
	"context"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/hint"
)

// Reserve is the free space a restore leaves on the engine's disk: it is
// refused before it starts when the archive's data would not fit above it.
const Reserve = 256 << 20

// ErrExists is an archive name that is taken: save never overwrites one.
var ErrExists = hint.New("the archive exists; save never overwrites an archive", "name another file with -o")

// ErrNotArchive is a file that is not a boxes archive by its name.
var ErrNotArchive = hint.New("not a boxes archive (*"+archive.Ext+", *"+archive.ExtZstd+", *"+archive.ExtGzip+" or the smolvm tool's *"+archive.ExtLegacy+")",
	"boxes save writes NAME-YYYYMMDD-HHMMSS"+archive.Ext+"; rename an archive only back to the name it was given")

// ErrNeedsIdentity is an archive saved to age keys opened with no identity.
var ErrNeedsIdentity = hint.New("it is saved to age keys, not to a passphrase, and "+EnvIdentity+" is not set",
	"set "+EnvIdentity+" to the age identity file of a key it was saved to (archive.recipients in boxes.yaml)")

// ErrNoArchive is an archive path where there is no file.
var ErrNoArchive = hint.New("no such archive", "boxes save writes archives under backups/ beside boxes.yaml; boxes ls shows each box's last one")

// Hosts reaches the engine of each host of a workspace, for saves,
// restores and moves.
type Hosts interface {
	// BoxEngine is host's engine.
	BoxEngine(ctx context.Context, host string) (engine.Inside, error)
}
