package cli

import (
	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/backup"
)

// hints are the hints of every error in err's tree, outermost first: each
// error's own (its Hint or HintLines method), found wrapped or joined.
func hints(err error) []string {
	var out []string
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		switch h := e.(type) {
		case interface{ HintLines() []string }:
			out = append(out, h.HintLines()...)
		case interface{ Hint() string }:
			if s := h.Hint(); s != "" {
				out = append(out, s)
			}
		default:
			// archive knows nothing of the variables boxes reads keys from.
			if e == archive.ErrWrongPassphrase {
				out = append(out, "check "+backup.EnvPassphrase+", or "+backup.EnvIdentity+" for an archive saved to age recipients")
			}
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}
