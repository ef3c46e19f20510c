package archive

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"filippo.io/age"
)

// Write reads the engine's tar of a box's /data from data (entries "data/",
// "data/home/", …) and writes an archive of it to w, encrypted to recipients:
// a gzip'd tar whose first entry is manifest.json (m, with Format set and
// Created in UTC, now if zero) followed by data's entries.
//
// Each entry is checked by the same rules as Verify as it is copied. A bad
// entry, or any other error, fails Write before the encryption is finished,
// so what was written to w by then is never a readable archive.
func Write(w io.Writer, m Manifest, data io.Reader, recipients ...age.Recipient) (Summary, error) {
	m, err := prepare(m)
	if err != nil {
		return Summary{}, err
	}
	enc, err := age.Encrypt(w, recipients...)
	if err != nil {
		return Summary{}, fmt.Errorf("archive: encrypting: %w", err)
	}
	gz := gzip.NewWriter(enc)
	tw := tar.NewWriter(gz)
	if err := writeManifest(tw, m); err != nil {
		return Summary{}, err
	}
	in := entries{tr: tar.NewReader(data), bad: "reading the data tar"}
	sum, err := in.walk(func(h *tar.Header, body io.Reader) error {
		return copyEntry(tw, h, body)
	})
	if err != nil {
		return Summary{}, err
	}
	for _, c := range []io.Closer{tw, gz, enc} {
		if err := c.Close(); err != nil {
			return Summary{}, fmt.Errorf("archive: writing: %w", err)
		}
	}
	return sum, nil
}

// prepare returns the manifest to write for m, or why it can't be written.
func prepare(m Manifest) (Manifest, error) {
	if m.Box == "" {
		return Manifest{}, errors.New("archive: manifest has no box name")
	}
	m.Format = Format
	if m.Created.IsZero() {
		m.Created = time.Now()
	}
	m.Created = m.Created.UTC()
	return m, nil
}

// writeManifest writes m as the manifest.json entry.
func writeManifest(tw *tar.Writer, m Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("archive: %s: %w", manifestName, err)
	}
	b = append(b, '\n')
	h := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     manifestName,
		Mode:     0o644,
		Size:     int64(len(b)),
		ModTime:  m.Created,
	}
	if err := tw.WriteHeader(h); err != nil {
		return fmt.Errorf("archive: %s: %w", manifestName, err)
	}
	if _, err := tw.Write(b); err != nil {
		return fmt.Errorf("archive: %s: %w", manifestName, err)
	}
	return nil
}

// copyEntry writes one entry, and a regular file's content, to tw.
func copyEntry(tw *tar.Writer, h *tar.Header, body io.Reader) error {
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if h.Typeflag == tar.TypeReg {
		if _, err := io.Copy(tw, body); err != nil {
			return err
		}
	}
	return nil
}
