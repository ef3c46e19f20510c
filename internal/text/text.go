// Package text holds the small wording helpers boxes's messages share.
package text

import "fmt"

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
