package backup

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"filippo.io/age"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/reconcile"
)

// Restore restores archive file into the created, not yet started agent
// container id. The archive's content is checked as it streams: every
// regular file is hashed as it is sent and the stream fails, the restore
// with it, should any differ from the hashes recorded at save. What the box
// wrote is checked once it runs (the Seeder's Finish; a move's Check).
// hb's quiesce marker goes first: should the restore stop half-way, the
// box comes up quiesced (hb init waits) instead of running on part of the
// archive. maxBytes, when not zero, bounds the data restored (the size a
// check of the whole archive found).
func Restore(ctx context.Context, e engine.Inside, id, file string, identities []age.Identity, maxBytes int64) error {
	_, err := restoreData(ctx, e, id, file, identities, maxBytes)
	return err
}

// restoreData is Restore that returns what it streamed, for checkRestored.
func restoreData(ctx context.Context, e engine.Inside, id, file string, identities []age.Identity, maxBytes int64) (*archive.Contents, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// A box's owners, whatever the archive says: the agent's home is the
	// agent's, the rest root's.
	owner := &archive.Owner{Home: hb.AgentHome, UID: hb.AgentUID, GID: hb.AgentUID}
	// hb's quiesce marker is the stream's first entry: the engine writes
	// the entries in order, so a restore cut short leaves it.
	marker := func(tw *tar.Writer) error { return hb.WriteMarker(tw, "boxes restore") }
	data, err := archive.OpenData(f, archive.Options{Identities: identities, MaxBytes: maxBytes, Owner: owner, Before: marker})
	if err != nil {
		return nil, err
	}
	defer data.Close()
	if err := e.CopyTo(ctx, id, "/", data); err != nil {
		// The archive's own error says more than the engine's broken pipe.
		data.Close()
		if _, aerr := data.Contents(); aerr != nil && !errors.Is(aerr, io.ErrClosedPipe) {
			return nil, aerr
		}
		return nil, err
	}
	return data.Contents()
}

// checkRestored checks that running container id's /data holds every entry
// contents streamed into it, of its kind and size: a copy cut short, or an
// entry the engine dropped, fails it. It lists /data inside the box, one
// exec, instead of reading the data back through the engine: the content
// was checked against the archive's hashes as it streamed.
func checkRestored(ctx context.Context, e engine.Inside, id string, contents *archive.Contents) error {
	pr, pw := io.Pipe()
	checked := make(chan error, 1)
	go func() {
		err := contents.CheckListing(pr)
		_, _ = io.Copy(io.Discard, pr) // the rest, should the check stop early
		checked <- err
	}()
	var errb strings.Builder
	code, err := e.Run(ctx, id, "root", archive.ListCommand(hb.Data), pw, &errb)
	pw.Close()
	lerr := <-checked
	switch {
	case err != nil:
		return fmt.Errorf("listing the restored data: %w", err)
	case code != 0:
		return fmt.Errorf("listing the restored data: find exited %d: %s", code, strings.TrimSpace(errb.String()))
	case lerr != nil:
		return fmt.Errorf("checking the restored data against the archive: %w", lerr)
	}
	return nil
}

// Checked is one restore archive checked whole before anything changes.
type Checked struct {
	Box      string
	Archive  string
	Manifest archive.Manifest
	Summary  archive.Summary
}

// CheckRestores decrypts and checks every restore archive of the creates in
// p whole, before apply changes anything. identities is asked once, for the
// first archive. It returns nil identities when p restores nothing. Errors
// name an archive as shown does.
func CheckRestores(ctx context.Context, p *reconcile.Plan, dir string, identities func(path string) ([]age.Identity, error), shown func(string) string) ([]age.Identity, []Checked, error) {
	s := Seeder{Dir: dir}
	var ids []age.Identity
	var checked []Checked
	for _, b := range p.Boxes {
		if (b.Action != reconcile.Create && b.Action != reconcile.Recreate) || b.Restore == "" {
			continue
		}
		path := s.Path(b.Restore)
		if ids == nil {
			var err error
			if ids, err = identities(path); err != nil {
				return nil, nil, fmt.Errorf("box %s: restore: %w", b.Name, err)
			}
		}
		// Every rule, before anything is created; the content hashes are
		// checked as the restore streams, against those recorded at save.
		// Ctrl-C stops the check at its next read.
		m, sum, err := archive.VerifyFileContext(ctx, path, archive.Options{Identities: ids, RecordedHashes: true})
		if err != nil {
			return nil, nil, fmt.Errorf("box %s: restore: %s: %w; nothing was created or changed", b.Name, shown(b.Restore), err)
		}
		checked = append(checked, Checked{Box: b.Name, Archive: b.Restore, Manifest: m, Summary: sum})
	}
	return ids, checked, nil
}

// Bounds are the bounds on the data of each checked archive, by restore:
// path, for Seeder.Sizes: what the check found, and a little more for the
// legacy markers a reader drops after counting them.
func Bounds(checked []Checked) map[string]int64 {
	out := map[string]int64{}
	for _, c := range checked {
		out[c.Archive] = c.Summary.Bytes + archive.MarkerSlack
	}
	return out
}

// SameArchive reports whether a restore: path (relative to dir, boxes.yaml's
// directory) and a path name one file.
func SameArchive(dir, recorded, path string) bool {
	if !filepath.IsAbs(recorded) {
		recorded = filepath.Join(dir, recorded)
	}
	a, err := os.Stat(recorded)
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}
