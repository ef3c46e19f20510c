package workspace

import (
	"os"
	"path/filepath"
	"regexp"
)

// archiveName is how save names archives: NAME-YYYYMMDD-HHMMSS.tar.gz.age (.gpg from the older tool).
var archiveName = regexp.MustCompile(`^([a-z][a-z0-9-]*)-[0-9]{8}-[0-9]{6}\.tar\.(zst\.age|gz\.age|gz\.gpg)$`)

// NewestBackups maps a box name to its newest archive in dir (NAME-*.tar.gz.age
// or .gpg), as a path relative to dir's parent ("backups/…").
func NewestBackups(dir string) map[string]string {
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return out
	}
	newest := map[string]int64{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		m := archiveName.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		box := m[1]
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
