// Package hint makes sentinel errors that carry the one hint printed after
// them ("boxes: hint: …"), so that the package owning an error also owns
// what the user is told to do about it.
package hint

// New is a sentinel error with message msg and hint h; compare it with
// errors.Is.
func New(msg, h string) error { return &sentinel{msg: msg, hint: h} }

type sentinel struct{ msg, hint string }

func (e *sentinel) Error() string { return e.msg }

// Hint is what to do about the error.
func (e *sentinel) Hint() string { return e.hint }
