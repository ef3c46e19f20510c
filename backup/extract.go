package backup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"filippo.io/age"

	"github.com/hermes-box/boxes/archive"
)

// IdentitiesFromEnv are the Identities of archive file with the identity
// file EnvIdentity names; errors name the archive as shown.
func IdentitiesFromEnv(file, shown string, passphrase func() (string, error)) ([]age.Identity, error) {
	idFile := os.Getenv(EnvIdentity)
	ids, err := Identities(file, idFile, passphrase)
	var perr *fs.PathError
	if errors.As(err, &perr) && perr.Path == idFile {
		return nil, fmt.Errorf("%s: %w", EnvIdentity, err)
	}
	if errors.Is(err, ErrNotArchive) {
		return nil, fmt.Errorf("%s is %w", shown, ErrNotArchive)
	}
	if errors.Is(err, ErrNoArchive) {
		return nil, fmt.Errorf("%s: %w", shown, ErrNoArchive)
	}
	if errors.Is(err, ErrNeedsIdentity) {
		return nil, fmt.Errorf("%s: %w", shown, ErrNeedsIdentity)
	}
	return ids, err
}

// NotEmptyError is a directory that extract would write into but that
// holds files: extract never writes into files it did not make.
type NotEmptyError struct{ Dir, File string }

func (e *NotEmptyError) Error() string {
	return fmt.Sprintf("%s is not empty; extract writes only into a new or empty directory", e.Dir)
}

// Hint is what to do about it.
func (e *NotEmptyError) Hint() string {
	return "name another directory: boxes extract " + e.File + " DIR"
}

// extractDir is where archive file is unpacked: dir, else the archive's
// name without its extension. A directory that holds anything is a
// *NotEmptyError.
func extractDir(file, dir string) (string, error) {
	if dir == "" {
		dir = archive.TrimExt(filepath.Base(file))
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return "", &NotEmptyError{Dir: dir, File: file}
	}
	return dir, nil
}

// Extracted is what extract unpacked: archive File into Dir/data.
type Extracted struct {
	File, Dir string
	Manifest  archive.Manifest
	Summary   archive.Summary
}

// Extract decrypts, checks and unpacks archive file into dir/data (dir ""
// is the archive's name without its extension), leaving ExtractReserve free
// on its file system. A dir that holds anything is refused before
// identities (which may ask for a passphrase) is called. Once ctx is done,
// it stops and leaves dir as it was (see archive.ExtractFileContext). What
// the archive's read finds wrong is named by shown, the archive as
// messages name it.
func Extract(ctx context.Context, file, shown, dir string, identities func() ([]age.Identity, error), o archive.Options) (Extracted, error) {
	dir, err := extractDir(file, dir)
	if err != nil {
		return Extracted{}, err
	}
	if o.Identities, err = identities(); err != nil {
		return Extracted{}, err
	}
	m, sum, err := archive.ExtractFileContext(ctx, file, dir, archive.ExtractOptions{Options: o, Reserve: ExtractReserve})
	if err != nil && ctx.Err() == nil {
		err = fmt.Errorf("%s: %w", shown, err)
	}
	return Extracted{File: file, Dir: dir, Manifest: m, Summary: sum}, err
}
