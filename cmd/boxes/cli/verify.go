package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/backup"
	bytesread "github.com/hermes-box/boxes/progress"
)

// watch shows the progress of reading an archive file on stderr.
func watch(env *Env) func(string, io.Reader, int64) (io.Reader, func()) {
	return func(what string, r io.Reader, size int64) (io.Reader, func()) {
		p := bytesread.New(r, env.Err, what, size, env.IsTTY)
		return p, p.Done
	}
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
from ` + backup.EnvPassphrase + ` (or ` + backup.EnvOldPassphrase + `, ` + backup.EnvOldPassphraseFile + `), else the terminal; age
identities from ` + backup.EnvIdentity + `. Exits 1 if the archive fails a check.`,
		Args: exactlyOne("verify", "archive"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return verify(cmd.Context(), env, args[0], asJSON)
		},
	}
	jsonFlag(cmd, &asJSON, "print the result as JSON")
	return cmd
}

func verify(ctx context.Context, env *Env, file string, asJSON bool) error {
	id, err := openIdentity(ctx, env, file)
	if err != nil && ctx.Err() != nil {
		return interrupted(ctx, "verifying "+shown(file), "")
	}
	if err != nil {
		return err
	}
	m, sum, err := archive.VerifyFileContext(ctx, file, archive.Options{Identities: id, Progress: watch(env)})
	if err != nil && ctx.Err() != nil {
		// Stopped, the check found nothing either way: no report, not
		// even in JSON.
		return interrupted(ctx, "verifying "+shown(file), "")
	}
	if asJSON {
		if jerr := printJSON(env, archive.NewReport(file, m, sum, err)); jerr != nil {
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
	archive.WriteVerified(env.Out, shown(file), m, sum)
	return nil
}
