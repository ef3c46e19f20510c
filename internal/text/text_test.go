package text

import "testing"

func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "0 boxes", 1: "1 box", 2: "2 boxes"} {
		if got := Plural(n, "box", "boxes"); got != want {
			t.Errorf("Plural(%d) = %q", n, got)
		}
	}
}
