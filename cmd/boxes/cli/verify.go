package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/archive"
	bytesread "github.com/hermes-box/boxes/progress"
	"github.com/hermes-box/boxes/reconcile"
)

// The smolvm tool's passphrase variables, read after BOXES_PASSPHRASE.
const (
	envOldPassphrase     = "BOX_PASSPHRASE"
	envOldPassphraseFile = "BOX_PASSPHRASE_FILE"
)

// extractReserve is the free space extract leaves on the target's file
// system: an archive that would take it lower is stopped and its files
// removed.
const extractReserve = 256 << 20

// envPassphraseValue is the passphrase the environment gives: BOXES_PASSPHRASE,
// else the smolvm tool's BOX_PASSPHRASE or the first line of the file
// BOX_PASSPHRASE_FILE names; "" when none is set.
func envPassphraseValue() (string, error) {
	for _, name := range []string{envPassphrase, envOldPassphrase} {
		if p := os.Getenv(name); p != "" {
			return p, nil
		}
	}
	path := os.Getenv(envOldPassphraseFile)
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", envOldPassphraseFile, err)
	}
	p, _, _ := strings.Cut(string(b), "\n")
	if p = strings.TrimRight(p, "\r"); p == "" {
		return "", fmt.Errorf("%s: %s holds no passphrase", envOldPassphraseFile, path)
	}
	return p, nil
}

// watch shows the progress of reading an archive file on stderr.
func watch(env *Env) func(string, io.Reader, int64) (io.Reader, func()) {
	return func(what string, r io.Reader, size int64) (io.Reader, func()) {
		p := bytesread.New(r, env.Err, what, size, env.IsTTY)
		return p, p.Done
	}
}

// runtimeVersions lists the versions in a smolvm archive's runtime manifest.
func runtimeVersions(m archive.Manifest) string {
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

// verifyReport is verify's --json output (format_version 1).
type verifyReport struct {
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

func newVerifyCommand(env *Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify FILE",
		Short: "Decrypt an archive and check every entry and content hash (no Docker needed)",
		Long: `Decrypt an archive and read it to the end: every entry against the rules
load and extract apply (names, types, sizes, layout), and, for archives that
record them, the content hash of every regular file. Reads boxes archives of
every format and the smolvm tool's .tar.gz.gpg archives. The passphrase comes
from ` + envPassphrase + ` (or ` + envOldPassphrase + `, ` + envOldPassphraseFile + `), else the terminal; age
identities from ` + envIdentity + `. Exits 1 if the archive fails a check.`,
		Args: exactlyOne("verify", "archive"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return verify(cmd.Context(), env, args[0], asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func verify(ctx context.Context, env *Env, file string, asJSON bool) error {
	id, err := openIdentity(ctx, env, file)
	if err != nil {
		return err
	}
	m, sum, err := archive.VerifyFileWith(file, archive.Options{Identities: id, Progress: watch(env)})
	rep := verifyReport{FormatVersion: 1, File: file, OK: err == nil}
	if err != nil {
		rep.Error = err.Error()
	} else {
		rep.Format, rep.Legacy, rep.Box, rep.Image, rep.Tools, rep.DeclaredSize = m.Format, m.Legacy(), m.Box, m.Image, m.Tools, m.Size
		if !m.Created.IsZero() {
			rep.Created = &m.Created
		}
		rep.Files, rep.Dirs, rep.Links, rep.Bytes, rep.Hashed, rep.Dropped = sum.Files, sum.Dirs, sum.Links, sum.Bytes, sum.Hashed, sum.Dropped
	}
	if asJSON {
		if jerr := printJSON(env, rep); jerr != nil {
			return jerr
		}
		if err != nil {
			return &ExitError{Code: 1}
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", shown(file), err)
	}
	what := fmt.Sprintf("box %s, format %d", m.Box, m.Format)
	if m.Legacy() {
		what = "an archive of the smolvm tool; " + runtimeVersions(m)
	}
	created := ""
	if !m.Created.IsZero() {
		created = ", saved " + m.Created.Format(time.RFC3339)
	}
	hashes := "no content hashes recorded"
	if sum.Hashed > 0 {
		hashes = fmt.Sprintf("%d content hashes checked", sum.Hashed)
	}
	fmt.Fprintf(env.Out, "verified %s (%s%s): %d files, %d directories, %d links, %s of data, %s\n",
		shown(file), what, created, sum.Files, sum.Dirs, sum.Links, reconcile.HumanSize(sum.Bytes), hashes)
	if sum.Dropped > 0 {
		fmt.Fprintf(env.Out, "%d marker(s) of the smolvm tool will be left out on load and extract\n", sum.Dropped)
	}
	return nil
}
