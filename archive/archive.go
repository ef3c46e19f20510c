// Package archive reads and writes box archives: a compressed tar of a box's
// /data with a manifest, encrypted with age. It also reads the older smolvm
// tool's archives (see the legacy format below).
//
// The plaintext of a box archive is a compressed tar (S2 since format 3,
// zstd in format 2, gzip in format 1) whose first entry is manifest.json and whose other entries are
// the box's /data as the Docker engine's copy API shapes it: "data/",
// "data/home/", "data/home/agent/.bashrc", and so on. From format 2 on, a last
// entry, content.sha256, records the SHA-256 of every regular file and the
// total size of the data (see the trailer in hash.go), and the manifest may
// declare an upper bound on that size before any data is read.
//
// Every reader and writer in this package checks the same rules (see Verify),
// so an archive Write produces is one that Verify, Data and Extract accept,
// and nothing they accept can name a path outside data/ or be written
// through a symlink.
//
// The legacy format is the smolvm tool's NAME-YYYYMMDD-HHMMSS.tar.gz.gpg: an
// OpenPGP message encrypted with a passphrase whose plaintext is a gzip'd GNU
// tar of /data with names relative to it ("./", "./home/agent/…"). Readers
// map those names to "data/…" and then apply the same rules; the tool's own
// markers are dropped (see legacyMarker).
//
// Everything is streamed: no function holds a whole archive in memory.
package archive

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Format is the manifest format version this package writes. It reads every
// format from 1 to Format, and the legacy one (reported as format 0).
const Format = 3

// Ext is the file name extension of the box archives Write makes (format 3,
// S2-compressed).
const Ext = ".tar.s2.age"

// ExtZstd is the extension of box archives of format 2 (zstd-compressed).
const ExtZstd = ".tar.zst.age"

// ExtGzip is the extension of box archives of format 1 (gzip-compressed).
const ExtGzip = ".tar.gz.age"

// ExtLegacy is the extension of the smolvm tool's archives.
const ExtLegacy = ".tar.gz.gpg"

// exts are the archive extensions, longest match first.
var exts = []string{Ext, ExtZstd, ExtGzip, ExtLegacy}

// IsArchiveName reports whether name has the extension of an archive this
// package reads.
func IsArchiveName(name string) bool { return TrimExt(name) != name }

// TrimExt returns name without its archive extension (name itself if it has
// none).
func TrimExt(name string) string {
	for _, ext := range exts {
		if strings.HasSuffix(name, ext) {
			return strings.TrimSuffix(name, ext)
		}
	}
	return name
}

// stamped matches a NAME-YYYYMMDD-HHMMSS archive name once the extension is
// trimmed.
var stamped = regexp.MustCompile(`^(.+)-\d{8}-\d{6}$`)

// BoxFromName returns the box name in an archive's file name
// (NAME-YYYYMMDD-HHMMSS.EXT), or "" if it has no such name.
func BoxFromName(path string) string {
	m := stamped.FindStringSubmatch(TrimExt(filepath.Base(path)))
	if m == nil {
		return ""
	}
	return m[1]
}

// manifestName is the name of the archive's first entry.
const manifestName = "manifest.json"

// maxManifestSize bounds how much of manifest.json a reader will load.
const maxManifestSize = 1 << 20

// ErrWrongPassphrase is wrapped by the error returned when an archive was
// not encrypted to any of the given identities (for a passphrase: the
// passphrase is wrong).
var ErrWrongPassphrase = errors.New("wrong passphrase or not encrypted to this identity")

// ErrTooBig is wrapped by the error returned when an archive's data grows
// past its declared size or past the bound the caller set.
var ErrTooBig = errors.New("the data is larger than allowed")

// Manifest describes the box an archive was made from. For a legacy archive
// it is made up from the file's runtime manifest: Format 0, Writer "smolvm",
// Created and Tools from its created_at and other keys, Runtime all of them.
type Manifest struct {
	Format  int               `json:"format"`
	Box     string            `json:"box"`
	Created time.Time         `json:"created"`          // UTC
	Image   string            `json:"image,omitempty"`  // image ID the box ran
	Tools   map[string]string `json:"tools,omitempty"`  // tool versions inside that image
	Writer  string            `json:"writer,omitempty"` // "boxes <version>"
	// Size, when not zero, bounds the total size in bytes of the data's
	// regular files: Write refuses data that grows past it, and readers
	// refuse an archive whose data does. Set it to what the data measured
	// before it was read (with a margin if it may still change).
	Size    int64             `json:"size,omitempty"`
	Runtime map[string]string `json:"-"` // a legacy archive's runtime manifest
}

// Legacy reports whether m describes an archive of the smolvm tool.
func (m *Manifest) Legacy() bool { return m.Format == 0 }

// Summary counts what an archive's data holds. Links counts both symbolic
// and hard links; Bytes is the total size of the regular files; Hashed is the
// number of regular files whose content hash was recorded (when writing) or
// checked (when reading); Dropped counts the legacy markers left out.
type Summary struct {
	Files, Dirs, Links int
	Bytes              int64
	Hashed, Dropped    int
}

// check reports whether m is a manifest this package can read.
func (m *Manifest) check() error {
	switch {
	case m.Format > Format:
		return fmt.Errorf("archive: written by a newer boxes (format %d; this boxes reads formats up to %d)", m.Format, Format)
	case m.Format < 1:
		return fmt.Errorf("archive: %s: bad format %d", manifestName, m.Format)
	case m.Box == "":
		return fmt.Errorf("archive: %s: no box name", manifestName)
	case m.Size < 0:
		return fmt.Errorf("archive: %s: negative size", manifestName)
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
