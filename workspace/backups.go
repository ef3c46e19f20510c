package workspace

import (
	"os"
	"path/filepath"

	"github.com/hermes-box/boxes/archive"
)

// NewestBackups maps a box name to its newest archive in dir, named as save
// names them (NAME-YYYYMMDD-HHMMSS with any archive extension, the smolvm
// tool's .tar.gz.gpg included), as a path relative to dir's parent
// ("backups/…").
func NewestBackups(dir string) map[string]string {
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return out
	}
	newest := map[string]int64{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !archive.IsArchiveName(name) {
			continue
		}
		box := archive.BoxFromName(name)
		if box == "" {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if t := info.ModTime().UnixNano(); t >= newest[box] {
			newest[box] = t
			out[box] = filepath.Join("backups", name)
		}
	}
	return out
}
