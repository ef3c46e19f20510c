// Package cli holds the boxes commands: flag parsing and printing only. Each
// command's RunE calls one plain function of the packages that do the work.
package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/internal/terminal"
	"github.com/hermes-box/boxes/internal/text"
	"github.com/hermes-box/boxes/workspace"
)

// Streams are the standard streams a command reads and writes, injected so
// commands run in-process in tests.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// IsTTY reports whether In and Out are a terminal (prompts, colour, live progress).
	IsTTY bool
}

// StdStreams are the process's own streams.
func StdStreams() Streams { return streamsOf(os.Stdin, os.Stdout, os.Stderr) }

// streamsOf are in, out and errs as a command's streams.
func streamsOf(in, out, errs *os.File) Streams {
	return Streams{In: in, Out: out, Err: errs, IsTTY: terminal.Is(in) && terminal.Is(out)}
}

// Env is what every command shares: the streams and the global flags.
type Env struct {
	Streams
	// File is the path of boxes.yaml; boxes.lock and .boxes/ live beside it.
	File string
	// connectors reach the hosts, by kind.
	connectors Connectors
	// printedJSON is set once a JSON document went to stdout: a command
	// that fails after printing its result does not print its errors too.
	printedJSON bool
}

// Dir is the directory holding boxes.yaml.
func (e *Env) Dir() string { return filepath.Dir(e.File) }

// LockFile is the path of boxes.lock.
func (e *Env) LockFile() string { return workspace.LockPathOf(e.File) }

// Warnf prints a warning line to stderr.
func (e *Env) Warnf(format string, args ...any) {
	fmt.Fprintf(e.Err, "boxes: warning: "+format+"\n", args...)
}

// printJSON writes v to stdout as indented JSON.
func printJSON(env *Env, v any) error {
	env.printedJSON = true
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := env.Out.Write(escapeInvisible(buf.Bytes()))
	return err
}

// escapeInvisible writes each rune of the JSON document doc that a terminal
// would act on or hide (a C1 control, a bidirectional override, a
// zero-width one) as its \u escape: a document carrying what a box's agent
// chose reads the same to a program and cannot steer the terminal it is
// shown on. The encoder escapes the ASCII controls itself, and such runes
// occur only inside strings.
func escapeInvisible(doc []byte) []byte {
	if !bytes.ContainsFunc(doc, invisible) {
		return doc
	}
	var out bytes.Buffer
	for _, r := range string(doc) {
		switch {
		case !invisible(r):
			out.WriteRune(r)
		case r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(&out, `\u%04x\u%04x`, hi, lo)
		default:
			fmt.Fprintf(&out, `\u%04x`, r)
		}
	}
	return out.Bytes()
}

func invisible(r rune) bool { return r >= utf8.RuneSelf && !text.Shown(r) }

// ExitError carries an exit code other than 1 (e.g. plan --detailed-exitcode's 2)
// or an error that has already been reported.
type ExitError struct {
	Code int
	Err  error // nil when nothing more is to be printed
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Main runs boxes with args and returns the process exit code. SIGINT and
// SIGTERM cancel the command's context: whatever it started, it undoes or
// leaves recoverable (save resumes the box, a prompt restores the terminal).
func Main(s Streams, args []string) int {
	return MainOn(s, args, DefaultConnectors())
}

// MainOn is Main with the hosts reached through c.
func MainOn(s Streams, args []string, c Connectors) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return MainWith(ctx, s, args, c)
}

// MainContext runs boxes with args until ctx ends and returns the exit code.
func MainContext(ctx context.Context, s Streams, args []string) int {
	return MainWith(ctx, s, args, DefaultConnectors())
}

// MainWith is MainContext with the hosts reached through c.
func MainWith(ctx context.Context, s Streams, args []string, c Connectors) int {
	err := runWith(ctx, s, args, c)
	if err == nil {
		return 0
	}
	code := 1
	var exit *ExitError
	if errors.As(err, &exit) {
		code = exit.Code
		if exit.Err == nil {
			return code
		}
	}
	Report(s.Err, err)
	return code
}

// interrupted is the error of a command that Ctrl-C or SIGTERM stopped
// (ctx is done): what it was doing and, when left is not "", what that
// leaves, in place of the error its last read or write ended with, which
// only says how it stopped. It exits 1, as every other error does.
func interrupted(ctx context.Context, doing, left string) error {
	msg := doing + ": interrupted"
	if left != "" {
		msg += "; " + left
	}
	return &interruptedError{msg: msg, cause: ctx.Err()}
}

type interruptedError struct {
	msg   string
	cause error
}

func (e *interruptedError) Error() string { return e.msg }
func (e *interruptedError) Unwrap() error { return e.cause }

// Report prints err as "boxes: error: …" lines, one per error where several
// were collected (errors.Join), then the hints they carry.
func Report(w io.Writer, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(w, "boxes: error: %s\n", line)
	}
	for _, h := range hint.Lines(err, wrongPassphrase) {
		fmt.Fprintf(w, "boxes: hint: %s\n", h)
	}
}

// Run parses args and runs one command.
func Run(ctx context.Context, s Streams, args []string) error {
	return runWith(ctx, s, args, DefaultConnectors())
}

func runWith(ctx context.Context, s Streams, args []string, c Connectors) error {
	env := &Env{Streams: s, connectors: c}
	root := newRoot(env)
	root.SetArgs(terraformFlags(args))
	cmd, err := root.ExecuteContextC(ctx)
	var exit *ExitError
	if err == nil || (errors.As(err, &exit) && exit.Err == nil) {
		return err
	}
	// With --json, stdout holds one JSON document: the command's result,
	// or, when it failed before it had one, its errors. stderr has them as
	// text as ever.
	if asksJSON(cmd) && !env.printedJSON {
		if jerr := printJSON(env, errorsOf(err)); jerr != nil {
			return errors.Join(err, jerr)
		}
	}
	return err
}

// newRoot is the boxes command with every subcommand, on env's streams.
func newRoot(env *Env) *cobra.Command {
	root := &cobra.Command{
		Use:   "boxes",
		Short: "Keep agent boxes on Docker in the state declared in boxes.yaml",
		Long: `Keep agent boxes on Docker in the state declared in boxes.yaml. A box is a
long-lived Linux environment with the coding-agent tools installed: an agent
container that publishes no port and an Executor container beside it, one
compose project hbl-NAME per box. boxes.yaml says which boxes exist and how;
boxes.lock pins the image and the tools in it.

  boxes init                # write a starter boxes.yaml
  boxes lock update         # pin the tools, then
  boxes build               # build the image and lock it
  boxes plan                # see what apply would do, and why
  boxes apply               # make it so

boxes.lock and .boxes/ (tokens, locks) live beside boxes.yaml; -f names
another boxes.yaml. "boxes COMMAND --help" says more about each command.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			abs, err := filepath.Abs(env.File)
			if err != nil {
				return err
			}
			env.File = abs
			return nil
		},
	}
	root.SetIn(env.In)
	root.SetOut(env.Out)
	root.SetErr(env.Err)
	root.PersistentFlags().StringVarP(&env.File, "file", "f", "boxes.yaml", "path of boxes.yaml (boxes.lock and .boxes/ live beside it)")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })
	root.CompletionOptions.DisableDefaultCmd = true

	for _, newCommand := range commands {
		root.AddCommand(newCommand(env))
	}
	addCompletions(root, env)
	// Outside the table: mcp runs boxes itself, in-process, for each tool call.
	root.AddCommand(newMCPCommand(env))
	return root
}

// exactlyOne is the Args check of a command taking one NAME: a specific
// sentence ("stop needs exactly one box name") rather than cobra's count.
func exactlyOne(verb, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != 1 {
			return fmt.Errorf("%s needs exactly one %s", verb, what)
		}
		return nil
	}
}

// between is the Args check of a command taking min to max arguments,
// failing with msg.
func between(min, max int, msg string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) < min || len(args) > max {
			return errors.New(msg)
		}
		return nil
	}
}

// commands lists every subcommand constructor; each lives in its own file.
var commands = []func(*Env) *cobra.Command{
	newVersionCommand,
	newInitCommand,
	newValidateCommand,
	newSchemaCommand,
	newComposeCommand,
	newPlanCommand,
	newDiffCommand,
	newCompletionCommand,
	newApplyCommand,
	newLockCommand,
	newLsCommand,
	newStopCommand,
	newStartCommand,
	newRmCommand,
	newVerifyCommand,
	newBuildCommand,
	newEnterCommand,
	newExecCommand,
	newLogsCommand,
	newEgressCommand,
	newDoctorCommand,
	newOpenCommand,
	newSaveCommand,
	newLoadCommand,
	newSnapshotCommand,
	newSnapshotsCommand,
	newRevertCommand,
	newImportCommand,
	newImportHermesCommand,
	newLeaseCommand,
	newRenewCommand,
	newReleaseCommand,
	newLeasesCommand,
	newExtractCommand,
	newGateCommand,
}

// terraformFlags accepts spellings people type from habit: Terraform's
// single-dash -out FILE (and -out=FILE) as --out, and docker's logs -f as
// logs --follow (before the command, -f is still --file).
func terraformFlags(args []string) []string {
	out := make([]string, len(args))
	command := "" // the first word that is not a flag or the value of one
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			copy(out[i:], args[i:])
			return out
		case command == "" && (a == "-f" || a == "--file") && i+1 < len(args):
			out[i], out[i+1] = a, args[i+1]
			i++
			continue
		case command == "" && !strings.HasPrefix(a, "-"):
			command = a
		case a == "-out" || strings.HasPrefix(a, "-out="):
			a = "-" + a
		case command == "logs" && a == "-f":
			a = "--follow"
		}
		out[i] = a
	}
	return out
}
