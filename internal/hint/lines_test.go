package hint

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
)

type lines []string

func (lines) Error() string         { return "several" }
func (l lines) HintLines() []string { return l }

// The hints of a tree come outermost first, from wrapped and joined errors,
// and a known sentinel's from the table, each once.
func TestLines(t *testing.T) {
	bare := errors.New("wrong passphrase")
	locked := New("locked", "wait for it")
	err := Wrap(errors.Join(
		fmt.Errorf("alpha: %w", bare),
		fmt.Errorf("beta: %w", locked),
		lines{"one", "two", "wait for it"},
	), "boxes plan shows %s", "what is left")
	got := Lines(err, Known{Err: bare, Hint: "check the passphrase"})
	want := []string{"boxes plan shows what is left", "check the passphrase", "wait for it", "one", "two"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if !errors.Is(err, locked) || err.Error() != "alpha: wrong passphrase\nbeta: locked\nseveral" {
		t.Errorf("Wrap changed the error: %q", err)
	}
	if Lines(errors.New("plain")) != nil {
		t.Error("a plain error has no hint")
	}
}
