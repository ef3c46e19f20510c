package hint

import (
	"errors"
	"fmt"
	"testing"
)

func TestNew(t *testing.T) {
	err := New("locked", "wait for it")
	wrapped := fmt.Errorf("%w: held by pid 7", err)
	if !errors.Is(wrapped, err) || errors.Is(wrapped, New("locked", "wait for it")) {
		t.Fatal("a sentinel is itself and nothing else")
	}
	if err.Error() != "locked" || err.(interface{ Hint() string }).Hint() != "wait for it" {
		t.Fatalf("%q", err)
	}
}
