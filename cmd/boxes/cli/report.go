package cli

import (
	"errors"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/spec"
)

// wrongPassphrase is the hint of archive's wrong passphrase, which knows
// nothing of the variables boxes reads keys from.
var wrongPassphrase = hint.Known{Err: archive.ErrWrongPassphrase, Hint: "check " + backup.EnvPassphrase + ", or " + backup.EnvIdentity + " for an archive saved to age recipients"}

// ErrorsFormat is the format_version of the errors document; bump it on
// any incompatible change.
const ErrorsFormat = 1

// errorsJSON is what a command given --json prints on stdout when it fails
// before it has printed its result: the errors, each with its place in a
// file where it has one and the hint.
type errorsJSON struct {
	FormatVersion int         `json:"format_version"`
	Errors        []errorJSON `json:"errors"`
}

type errorJSON struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Col     int    `json:"col,omitempty"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

// errorsOf is err as errorsJSON: a file's errors one by one with their
// places and hints, errors collected from several places (errors.Join) one
// each, anything else one error with its hints.
func errorsOf(err error) errorsJSON {
	return errorsJSON{FormatVersion: ErrorsFormat, Errors: appendErrors(nil, err)}
}

func appendErrors(out []errorJSON, err error) []errorJSON {
	var exit *ExitError
	if errors.As(err, &exit) && exit.Err != nil && exit.Err.Error() == err.Error() {
		err = exit.Err
	}
	var inFile spec.Errors
	if errors.As(err, &inFile) && inFile.Error() == err.Error() {
		for _, e := range inFile {
			out = append(out, errorJSON{File: e.File, Line: e.Line, Col: e.Col, Message: e.Msg, Hint: e.Hint})
		}
		return out
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok && len(joined.Unwrap()) > 1 {
		for _, e := range joined.Unwrap() {
			out = append(out, appendErrors(nil, e)...)
		}
		return out
	}
	return append(out, errorJSON{Message: err.Error(), Hint: strings.Join(hint.Lines(err, wrongPassphrase), "\n")})
}

// asksJSON reports whether cmd was given --json.
func asksJSON(cmd *cobra.Command) bool {
	if cmd == nil {
		return false
	}
	f := cmd.Flags().Lookup("json")
	return f != nil && f.Value.String() == "true"
}
