// Package archive reads and writes box archives: a gzip'd tar of a box's
// /data with a manifest, encrypted with age.
//
// The plaintext of an archive is a gzip'd tar whose first entry is
// manifest.json and whose other entries are the box's /data as the Docker
// engine's copy API shapes it: "data/", "data/home/", "data/home/agent/.bashrc",
// and so on. Every reader and writer in this package checks the same rules
// (see Verify), so an archive Write produces is one that Verify, Data and
// Extract accept, and nothing they accept can name a path outside data/ or
// be written through a symlink.
//
// Everything is streamed: no function holds a whole archive in memory.
package archive

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Format is the manifest format version this package writes and reads.
const Format = 1

// Ext is the file name extension of a box archive.
const Ext = ".tar.gz.age"

// manifestName is the name of the archive's first entry.
const manifestName = "manifest.json"

// maxManifestSize bounds how much of manifest.json a reader will load.
const maxManifestSize = 1 << 20

// ErrWrongPassphrase is wrapped by the error returned when an archive was
// not encrypted to any of the given identities (for a passphrase: the
// passphrase is wrong).
var ErrWrongPassphrase = errors.New("wrong passphrase or not encrypted to this identity")

// Manifest describes the box an archive was made from.
type Manifest struct {
	Format  int               `json:"format"`
	Box     string            `json:"box"`
	Created time.Time         `json:"created"`          // UTC
	Image   string            `json:"image,omitempty"`  // image ID the box ran
	Tools   map[string]string `json:"tools,omitempty"`  // tool versions inside that image
	Writer  string            `json:"writer,omitempty"` // "boxes <version>"
}

// Summary counts what an archive's data holds. Links counts both symbolic
// and hard links; Bytes is the total size of the regular files.
type Summary struct {
	Files, Dirs, Links int
	Bytes              int64
}

// check reports whether m is a manifest this package can read.
func (m *Manifest) check() error {
	switch {
	case m.Format > Format:
		return fmt.Errorf("archive: written by a newer boxes (format %d; this boxes reads format %d)", m.Format, Format)
	case m.Format < 1:
		return fmt.Errorf("archive: %s: bad format %d", manifestName, m.Format)
	case m.Box == "":
		return fmt.Errorf("archive: %s: no box name", manifestName)
	}
	return nil
}

// parseManifest decodes and checks the content of manifest.json.
func parseManifest(b []byte) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return Manifest{}, fmt.Errorf("archive: %s: %v", manifestName, err)
	}
	if err := m.check(); err != nil {
		return Manifest{}, err
	}
	return m, nil
}
