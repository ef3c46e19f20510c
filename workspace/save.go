package workspace

import (
	"fmt"
	"os"
	"strings"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/internal/hint"
)

// ErrArchiveExt is the error for an archive name given to save without the
// extension of the format save writes: load, restore: and ls tell archives
// by their names.
var ErrArchiveExt = hint.New("an archive's name ends in "+archive.Ext+", the format save writes",
	"name it FILE"+archive.Ext)

// SaveTo is where save writes box name's archive: out, else a free default
// name under dir (see FreeArchivePath). A file already there is refused,
// named as shown names it: save never overwrites one; so is a name
// without the archive extension.
func SaveTo(dir, name, out string, shown func(string) string) (string, error) {
	if out == "" {
		out = FreeArchivePath(dir, name)
	}
	if !strings.HasSuffix(out, archive.Ext) {
		return "", fmt.Errorf("%s: %w", shown(out), ErrArchiveExt)
	}
	if _, err := os.Lstat(out); err == nil {
		return "", fmt.Errorf("%s: %w", shown(out), backup.ErrExists)
	}
	return out, nil
}

// Saved is save's result: box name's archive at out, as s describes it,
// with the archive file's sha256 when sum is set.
func (w *Workspace) Saved(name, out string, s backup.Saved, sum bool) (BoxResult, error) {
	res := BoxResult{FormatVersion: ResultFormat, Box: name, Archive: w.opts.Shown(out), ArchiveBytes: s.Size, Verified: true,
		Files: &s.Summary.Files, Dirs: &s.Summary.Dirs, DataBytes: &s.Summary.Bytes, did: s.Text(name, w.opts.Shown(out))}
	res.Host, _ = w.HostOf(name)
	if sum {
		var err error
		if res.SHA256, err = backup.FileSHA256(out); err != nil {
			return BoxResult{}, err
		}
	}
	return res, nil
}
