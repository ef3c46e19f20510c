package archive

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/hermes-box/boxes/internal/text"
)

// ReportFormat is the format_version of Report's JSON; bump it on any
// incompatible change.
const ReportFormat = 1

// Report is what a check of an archive file found: verify --json prints it
// (format_version ReportFormat).
type Report struct {
	FormatVersion int               `json:"format_version"`
	File          string            `json:"file"`
	OK            bool              `json:"ok"`
	Error         string            `json:"error,omitempty"`
	Format        int               `json:"archive_format"` // 0: the smolvm tool's
	Legacy        bool              `json:"legacy"`
	Box           string            `json:"box,omitempty"`
	Created       *time.Time        `json:"created,omitempty"`
	Image         string            `json:"image,omitempty"`
	Tools         map[string]string `json:"tools,omitempty"`
	DeclaredSize  int64             `json:"declared_size,omitempty"`
	Files         int               `json:"files"`
	Dirs          int               `json:"dirs"`
	Links         int               `json:"links"`
	Bytes         int64             `json:"bytes"`
	Hashed        int               `json:"hashes_checked"`
	Dropped       int               `json:"markers_dropped"`
}

// NewReport is the report of file, whose check returned m, sum and err.
func NewReport(file string, m Manifest, sum Summary, err error) Report {
	rep := Report{FormatVersion: ReportFormat, File: file, OK: err == nil}
	if err != nil {
		rep.Error = err.Error()
		return rep
	}
	rep.Format, rep.Legacy, rep.Box, rep.Image, rep.Tools, rep.DeclaredSize = m.Format, m.Legacy(), m.Box, m.Image, m.Tools, m.Size
	if !m.Created.IsZero() {
		rep.Created = &m.Created
	}
	rep.Files, rep.Dirs, rep.Links, rep.Bytes, rep.Hashed, rep.Dropped = sum.Files, sum.Dirs, sum.Links, sum.Bytes, sum.Hashed, sum.Dropped
	return rep
}

// RuntimeVersions lists the versions in a smolvm archive's runtime
// manifest, as a clause of a sentence.
func (m *Manifest) RuntimeVersions() string {
	if len(m.Tools) == 0 {
		return "it holds no runtime manifest"
	}
	keys := make([]string, 0, len(m.Tools))
	for k := range m.Tools {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("its runtime:")
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%s;", k, m.Tools[k])
	}
	return strings.TrimSuffix(b.String(), ";")
}

// WriteVerified writes what boxes verify prints of archive file (named
// shown) that passed every check: what it holds, and what was checked.
func WriteVerified(w io.Writer, shown string, m Manifest, sum Summary) {
	what := fmt.Sprintf("box %s, format %d", m.Box, m.Format)
	if m.Legacy() {
		what = "an archive of the smolvm tool; " + m.RuntimeVersions()
	}
	created := ""
	if !m.Created.IsZero() {
		created = ", saved " + m.Created.Format(time.RFC3339)
	}
	hashes := "no content hashes recorded"
	if sum.Hashed > 0 {
		hashes = text.Plural(sum.Hashed, "content hash", "content hashes") + " checked"
	}
	fmt.Fprintf(w, "verified %s (%s%s): %s, %s, %s, %s of data, %s\n", shown, what, created, text.Plural(sum.Files, "file", "files"),
		text.Plural(sum.Dirs, "directory", "directories"), text.Plural(sum.Links, "link", "links"), text.Size(sum.Bytes), hashes)
	if sum.Dropped > 0 {
		fmt.Fprintf(w, "%s of the smolvm tool will be left out on load and extract\n", text.Plural(sum.Dropped, "marker", "markers"))
	}
}
