package backup

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/hermes-box/boxes/internal/text"
)

// WriteText writes what the check of restore archive c found, as apply and
// load print it before anything changes; shown names the archive.
func (c Checked) WriteText(w io.Writer, shown func(string) string) {
	fmt.Fprintf(w, "restore: %s for box %s holds box %s from %s, %s, checked\n", shown(c.Archive), c.Box, c.Manifest.Box,
		c.Manifest.Created.Format(time.RFC3339), text.Plural(c.Summary.Files, "file", "files"))
	if c.Manifest.Legacy() {
		fmt.Fprintf(w, "restore: %s is an archive of the smolvm tool; %s\n", shown(c.Archive), c.Manifest.RuntimeVersions())
	}
}

// Text is what save prints of the archive it wrote (named shown) for box name.
func (s Saved) Text(name, shown string) string {
	return fmt.Sprintf("saved %s to %s: %s, %s, %s of data, %s archive, verified", name, shown,
		text.Plural(s.Summary.Files, "file", "files"), text.Plural(s.Summary.Dirs, "directory", "directories"),
		text.Size(s.Summary.Bytes), text.Size(s.Size))
}

// WriteText writes what extract unpacked, as it prints it; shown names the archive.
func (e Extracted) WriteText(w io.Writer, shown func(string) string) {
	fmt.Fprintf(w, "extracted %s (box %s, saved %s) to %s: %s, %s, %s\n", shown(e.File), e.Manifest.Box, e.Manifest.Created.Format(time.RFC3339),
		filepath.Join(e.Dir, "data"), text.Plural(e.Summary.Files, "file", "files"), text.Plural(e.Summary.Dirs, "directory", "directories"), text.Size(e.Summary.Bytes))
}
