package text

import "testing"

func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "0 boxes", 1: "1 box", 2: "2 boxes"} {
		if got := Plural(n, "box", "boxes"); got != want {
			t.Errorf("Plural(%d) = %q", n, got)
		}
	}
}

// Printable keeps text as written, format verbs and all, and writes what a
// terminal would act on as its escape.
func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"evil%2eexample:8080 %d %s %v %x %% %!": "evil%2eexample:8080 %d %s %v %x %% %!",
		"bücher.example → ok":                   "bücher.example → ok",
		"red\x1b[31mtext":                       `red\x1b[31mtext`,
		"csi\u009b31m":                          `csi\u009b31m`,
		"evil\u202excod.example":                `evil\u202excod.example`,
		"zero\u200bwidth":                       `zero\u200bwidth`,
		"tab\tline\nbreak\r":                    `tab\tline\nbreak\r`,
		"bad\xffbyte":                           `bad\xffbyte`,
		"a real \uFFFD stays":                   "a real \uFFFD stays",
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}
