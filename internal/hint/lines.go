package hint

import "fmt"

// Wrap is err with the hint formatted from format and args: the next thing
// the user should do about it.
func Wrap(err error, format string, args ...any) error {
	return &wrapped{err: err, hint: fmt.Sprintf(format, args...)}
}

type wrapped struct {
	err  error
	hint string
}

func (e *wrapped) Error() string { return e.err.Error() }
func (e *wrapped) Unwrap() error { return e.err }
func (e *wrapped) Hint() string  { return e.hint }

// Known is the hint of a sentinel error whose package cannot name one: it
// knows nothing of the variables or commands that fix it.
type Known struct {
	Err  error
	Hint string
}

// Lines are the hints of every error in err's tree, outermost first, found
// wrapped or joined: each error's own (its Hint or HintLines method), else
// the one known names for it. A hint found twice (errors joined from
// several boxes) is given once.
func Lines(err error, known ...Known) []string {
	var out []string
	seen := map[string]bool{}
	add := func(h string) {
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		switch h := e.(type) {
		case interface{ HintLines() []string }:
			for _, s := range h.HintLines() {
				add(s)
			}
		case interface{ Hint() string }:
			if s := h.Hint(); s != "" {
				add(s)
			}
		default:
			for _, k := range known {
				if e == k.Err {
					add(k.Hint)
				}
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
