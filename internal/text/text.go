// Package text holds the small wording helpers boxes's messages share.
package text

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Plural is "1 box", "2 boxes".
func Plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Size is n bytes the way people read them: 512 B, 1.5 MiB; a negative n is unknown.
func Size(n int64) string {
	if n < 0 {
		return "size unknown"
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// Printable is s, text someone else chose (a box's agent, through its
// gate's log), made safe to print to a terminal as data: every rune that
// is not graphic (a control character, an escape, a bidirectional
// override, a zero-width one) and every byte that is not UTF-8 is written
// as its Go escape (\x1b, \u202e, \xff); the rest is kept as it is.
func Printable(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r == utf8.RuneError || !Shown(r) }) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case Shown(r):
			b.WriteString(s[i : i+size])
		default:
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

// Shown reports whether a terminal shows r as itself: a space or a graphic
// rune that is no bidirectional control.
func Shown(r rune) bool {
	return r == ' ' || unicode.IsGraphic(r) && !unicode.Is(unicode.Bidi_Control, r)
}
