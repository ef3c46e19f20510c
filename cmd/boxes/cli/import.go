package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/internal/text"
	"github.com/hermes-box/boxes/progress"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/toolstate"
	"github.com/hermes-box/boxes/workspace"
)

// importLong is what import and import-hermes do, after their first line.
const importLong = `
DIR is checked whole before the box is touched: it must be a directory (DIR
itself may be a link to one) holding only directories, regular files you
can read and relative links to something inside it, and its files must
hold at most --max-size (1GiB unless raised); anything else is refused,
naming the path. The credentials it holds are listed by file and kind,
never by value: an API key is better kept in boxes.yaml's credentials:,
whose gate adds it to requests so that the box never holds it.

Under the box's lock, boxes says what the import does. When the box holds
state there already (anything but an empty directory), the box's name must
be typed to replace it (--confirm NAME confirms without a prompt, and
without a terminal it is needed), and a snapshot of the box's /data,
before-import-TOOL-YYYYMMDD-HHMMSS, keeps it: boxes revert puts it back.

A running box is stopped, so that no process writes the state while it is
replaced; the tree is copied in beside the tool's directory, owned by the
box's agent user (its IDs read in the box's own image), with the files'
permission bits and times, then put in its place, and the box is started
again, with its token; a stopped box stays stopped. Should the copy fail,
it is removed and the box's state is as it was.`

// importFlags are the flags of import and import-hermes.
type importFlags struct {
	tool, confirm, maxSize string
	asJSON                 bool
}

func (f *importFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.confirm, "confirm", "", "the box's name, to replace the state it holds without a prompt")
	cmd.Flags().StringVar(&f.maxSize, "max-size", "1GiB", "refuse a DIR whose files hold more than this")
	jsonFlag(cmd, &f.asJSON, resultJSON)
}

func newImportCommand(env *Env) *cobra.Command {
	var f importFlags
	cmd := &cobra.Command{
		Use:   "import NAME [DIR]",
		Short: "Put a coding tool's state from this machine into a box (--tool hermes, claude or codex)",
		Long: `Put the state of a coding tool from directory DIR of this machine into box
NAME, where the box points the tool: --tool hermes imports ~/.hermes into
/data/home/agent/.hermes, --tool claude ~/.claude into .claude, --tool
codex ~/.codex into .codex (DIR defaults to the tool's directory in your
home). boxes import-hermes NAME [DIR] is --tool hermes.
` + importLong + `

  boxes import alpha --tool claude
  boxes import alpha --tool codex ./codex-home --confirm alpha`,
		Args: between(1, 2, "import needs a box name and, optionally, a directory: boxes import NAME --tool TOOL [DIR]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.tool == "" {
				return hint.Wrap(fmt.Errorf("import needs --tool, the tool whose state to import: %s; nothing was changed", toolstate.Names()),
					"boxes import %s --tool hermes (or boxes import-hermes %s)", args[0], args[0])
			}
			tool, err := toolstate.Named(f.tool)
			if err != nil {
				return err
			}
			return importState(cmd.Context(), env, tool, args, f)
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&f.tool, "tool", "", "the tool whose state DIR holds: "+toolstate.Names())
	_ = cmd.RegisterFlagCompletionFunc("tool", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		var names []string
		for _, t := range toolstate.Tools {
			names = append(names, t.Name)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

func newImportHermesCommand(env *Env) *cobra.Command {
	var f importFlags
	cmd := &cobra.Command{
		Use:   "import-hermes NAME [DIR]",
		Short: "Put Hermes's state (~/.hermes) into a box: boxes import NAME --tool hermes",
		Long: `Put Hermes's state from directory DIR of this machine (~/.hermes unless
named) into box NAME's /data/home/agent/.hermes, where the box points
Hermes (HERMES_HOME): boxes import NAME --tool hermes [DIR].
` + importLong + `

  boxes import-hermes alpha
  boxes import-hermes alpha ~/backup/hermes --confirm alpha --json`,
		Args: between(1, 2, "import-hermes needs a box name and, optionally, a directory: boxes import-hermes NAME [DIR]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			tool, err := toolstate.Named("hermes")
			if err != nil {
				return err
			}
			return importState(cmd.Context(), env, tool, args, f)
		},
	}
	f.add(cmd)
	return cmd
}

// importState imports tool's state from args' DIR into box args[0]: the
// directory checked and read for credentials first, then the box found
// under its lock, the import said, confirmed when it replaces state, and
// carried out.
func importState(ctx context.Context, env *Env, tool toolstate.Tool, args []string, f importFlags) error {
	name := args[0]
	if err := checkConfirm(name, f.confirm); err != nil {
		return err
	}
	maxBytes, err := spec.ParseSize(f.maxSize)
	if err != nil {
		return hint.Wrap(fmt.Errorf("--max-size %s: %v; nothing was changed", f.maxSize, err), "give a size such as 512MiB or 4GiB")
	}
	dir, shownDir, err := importDir(tool, args)
	if err != nil {
		return err
	}
	tree, err := toolstate.Check(dir, shownDir, maxBytes)
	if err != nil {
		return err
	}
	if tree.Bytes >= slowScan {
		fmt.Fprintf(env.Err, "import into %s: reading %s (%s) for credentials\n", name, text.Printable(tree.Shown), text.Size(tree.Bytes))
	}
	found, err := tree.Credentials()
	if err != nil {
		return err
	}
	// With --json, stdout holds only the result.
	talk := env.Out
	if f.asJSON {
		talk = env.Err
	}
	return inWorkspace(env, func(ws *workspace.Workspace) error {
		im, err := ws.LockedImport(ctx, name, tool, initWait(env, name), nil)
		if err != nil {
			return err
		}
		im.WriteText(talk, tree)
		writeCredentials(talk, tree, found)
		if im.Held.Replaced() {
			if err := confirmNameOn(env, talk, name, f.confirm, "Type the box's name to replace its "+tool.Title+" state: ",
				fmt.Errorf("import replaces what box %s holds at %s and there is no terminal to confirm it; nothing was changed", name, im.Path)); err != nil {
				return err
			}
		}
		var meter *progress.Reader
		res, err := ws.Import(ctx, im, tree, workspace.ImportOptions{
			Apply: applyOptions(ctx, env, env.Err, 1),
			Step:  func(msg string) { fmt.Fprintf(env.Err, "import into %s: %s\n", name, msg) },
			Warn:  env.Warnf,
			Content: func(r io.Reader) io.Reader {
				meter = progress.New(r, env.Err, "import into "+name+": "+text.Printable(tree.Shown), tree.Bytes, env.IsTTY)
				return meter
			},
			Copied: func() {
				if meter != nil {
					meter.Done()
				}
			},
		})
		if err != nil && ctx.Err() != nil {
			var ie *workspace.ImportError
			if errors.As(err, &ie) {
				return hint.Wrap(interrupted(ctx, "import into "+name, ie.Left), "%s", ie.Hint())
			}
			return interrupted(ctx, "import into "+name, "its state was not replaced")
		}
		if err != nil {
			return err
		}
		res.Credentials = append(res.Credentials, found...)
		return printed(env, f.asJSON, res, res.WriteText)
	})
}

// slowScan is the size of a tree whose reading for credentials takes
// long enough to be said (about a second).
const slowScan = 256 << 20

// importDir is the directory to import and how messages show it: DIR, or
// the tool's directory in the user's home.
func importDir(tool toolstate.Tool, args []string) (dir, shown string, err error) {
	if len(args) == 2 {
		if args[1] == "" {
			return "", "", errors.New("an empty DIR names no directory; nothing was changed")
		}
		return args[1], args[1], nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", "", hint.Wrap(fmt.Errorf("finding your home directory, for ~/%s: %v; nothing was changed", tool.Dir, err), "name the directory to import as DIR")
	}
	return filepath.Join(home, tool.Dir), "~/" + tool.Dir, nil
}

// shownFindings is how many credentials the text lists; --json lists all.
const shownFindings = 20

// writeCredentials lists the credentials found in tree, by file and kind.
func writeCredentials(w io.Writer, tree *toolstate.Tree, found []toolstate.Finding) {
	dir := text.Printable(tree.Shown)
	if len(found) == 0 {
		fmt.Fprintf(w, "no credentials found in %s\n", dir)
		return
	}
	fmt.Fprintf(w, "credentials in %s, by file (never by value); an API key is better in boxes.yaml's credentials:, which the box's gate adds to requests so that the box never holds it:\n", dir)
	for i, c := range found {
		if i == shownFindings {
			fmt.Fprintf(w, "  … and %d more (--json lists every one)\n", len(found)-i)
			break
		}
		where := c.Path
		if c.Line > 0 {
			where += ":" + strconv.Itoa(c.Line)
		}
		times := ""
		if c.Count > 1 {
			times = fmt.Sprintf(" (%d times)", c.Count)
		}
		fmt.Fprintf(w, "  %s: %s%s\n", text.Printable(where), text.Printable(c.What), times)
	}
}
