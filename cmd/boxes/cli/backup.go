package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"filippo.io/age"
	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/doctor"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/internal/terminal"
	"github.com/hermes-box/boxes/workspace"
)

func newSaveCommand(env *Env) *cobra.Command {
	var out string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "save NAME",
		Short: "Archive a box's /data, encrypted, to backups/NAME-YYYYMMDD-HHMMSS" + archive.Ext,
		Long: `Archive a box's /data to an age-encrypted file: under the per-box lock,
quiesce the box (hb quiesce), stream /data out with a manifest of the image
and tool versions, encrypt it to boxes.yaml's archive.recipients (age keys;
load and extract then read ` + backup.EnvIdentity + `, an age identity file) or else with
a passphrase (` + backup.EnvPassphrase + `, else asked on the terminal), verify it by
decrypting and reading it all back, then publish it without overwriting
anything. The box is resumed whatever happens.`,
		Args: exactlyOne("save", "box name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return save(cmd.Context(), env, args[0], out, asJSON)
		},
	}
	jsonFlag(cmd, &asJSON, resultJSON)
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the archive to FILE (default backups/NAME-YYYYMMDD-HHMMSS"+archive.Ext+" beside boxes.yaml)")
	return cmd
}

func save(ctx context.Context, env *Env, name, out string, asJSON bool) error {
	out, err := workspace.SaveTo(env.Dir(), name, out, shown)
	if err != nil {
		return err
	}
	return inWorkspace(env, func(ws *workspace.Workspace) error {
		res, err := ws.Save(ctx, name, out, workspace.SaveOptions{
			Passphrase: func() (string, error) {
				return passphrase(ctx, env, "a passphrase for "+name+"'s archive", true)
			},
			Writer: "boxes " + versionString(),
			Init:   initWait(env, name),
			Step:   func(msg string) { fmt.Fprintf(env.Err, "saving %s: %s\n", name, msg) },
			Warn:   env.Warnf,
			SHA256: asJSON,
		})
		if _, statErr := os.Lstat(out); err != nil && ctx.Err() != nil && errors.Is(statErr, fs.ErrNotExist) {
			return interrupted(ctx, "saving "+name, "no archive was written, and the box is resumed")
		}
		if err != nil {
			return err
		}
		return printed(env, asJSON, res, res.WriteText)
	})
}

// initWait is how long a command waits for box name's hb init, saying so
// on stderr after a second.
func initWait(env *Env, name string) hb.Wait {
	return hb.Wait{Timeout: InitTimeout, Waiting: func() { fmt.Fprintf(env.Err, "boxes: waiting for %s's hb init to finish\n", name) }}
}

func newExtractCommand(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "extract FILE [DIR]",
		Short: "Decrypt, check and unpack an archive into DIR (no Docker needed)",
		Long: `Decrypt archive FILE, check every entry as load would, and unpack the box's
/data into DIR/data. DIR defaults to the archive's name without its
extension; it must be new or empty, and extract stops (removing what it
wrote) rather than leave less than 256 MiB free on its file system. Reads
boxes archives and the smolvm tool's .tar.gz.gpg archives. The passphrase
comes from ` + backup.EnvPassphrase + ` (or ` + backup.EnvOldPassphrase + `, ` + backup.EnvOldPassphraseFile + `), else the
terminal; age identities from ` + backup.EnvIdentity + `.

  boxes extract backups/alpha-20261202-101500` + archive.Ext + ` alpha-files`,
		Args: between(1, 2, "extract needs an archive and, optionally, a directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return extract(cmd.Context(), env, args[0], strings.Join(args[1:], ""))
		},
	}
}

func extract(ctx context.Context, env *Env, file, dir string) error {
	x, err := backup.Extract(ctx, file, shown(file), dir, func() ([]age.Identity, error) { return openIdentity(ctx, env, file) },
		archive.Options{Progress: watch(env)})
	if err != nil && ctx.Err() != nil {
		return interrupted(ctx, "extracting "+shown(file), "nothing was extracted")
	}
	if err != nil {
		return err
	}
	x.WriteText(env.Out, shown)
	return nil
}

// openIdentity is what decrypts archive file: the age identities in the
// file $BOXES_IDENTITY names, else the passphrase.
func openIdentity(ctx context.Context, env *Env, file string) ([]age.Identity, error) {
	return backup.IdentitiesFromEnv(file, shown(file), func() (string, error) {
		return passphrase(ctx, env, "the passphrase of "+filepath.Base(file), false)
	})
}

func newLoadCommand(env *Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "load FILE NAME",
		Short: "Create box NAME from an archive: checked first, restored quiesced, fresh token, rewired, doctored",
		Long: `Create box NAME (declared in boxes.yaml, with no resources yet) from an
archive. The archive is decrypted and checked whole before anything is
created; then the box is created, its /data restored while it is quiesced,
given a fresh Executor token, started so that hb init rewires Claude and Codex
to it, and checked with boxes doctor. A box declared stopped is stopped again.`,
		Args: between(2, 2, "load needs an archive and a box name: boxes load FILE NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return load(cmd.Context(), env, args[0], args[1], asJSON)
		},
	}
	jsonFlag(cmd, &asJSON, resultJSON)
	return cmd
}

func load(ctx context.Context, env *Env, file, name string, asJSON bool) error {
	return inWorkspace(env, func(ws *workspace.Workspace) error {
		res, err := ws.Load(ctx, file, name, applyOptions(ctx, env, env.Err, 1), func(rep *doctor.Report) {
			if !asJSON {
				rep.WriteText(env.Out)
			}
		})
		if err != nil {
			return err
		}
		if res.Doctor.OK {
			return printed(env, asJSON, res, res.WriteText)
		}
		if asJSON {
			if err := printJSON(env, res); err != nil {
				return err
			}
		}
		return fmt.Errorf("loaded %s from %s, but doctor found problems", name, shown(file))
	})
}

// errNoPassphrase is a passphrase needed with neither the variable nor a terminal.
var errNoPassphrase = hint.New("no passphrase: "+backup.EnvPassphrase+" is not set and there is no terminal to ask on", "set "+backup.EnvPassphrase)

// passphrase is $BOXES_PASSPHRASE, else asked on the terminal (twice when
// confirm) without echo. A cancelled ctx (Ctrl-C) ends the prompt with the
// terminal's echo restored.
func passphrase(ctx context.Context, env *Env, what string, confirm bool) (string, error) {
	if p, err := backup.PassphraseFromEnv(); p != "" || err != nil {
		return p, err
	}
	prompt, err := terminal.NewPrompter(env.In, env.Err)
	if err != nil {
		return "", errNoPassphrase
	}
	p, err := prompt.Secret(ctx, "Enter "+what)
	if err != nil {
		return "", err
	}
	if p == "" {
		return "", errors.New("the passphrase is empty")
	}
	if confirm {
		again, err := prompt.Secret(ctx, "Enter it again")
		if err != nil {
			return "", err
		}
		if again != p {
			return "", errors.New("the passphrases differ")
		}
	}
	return p, nil
}
