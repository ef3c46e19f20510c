package spec

import (
	"fmt"
	"sort"
	"strings"
)

// Error is one problem in a file, at a line and column.
type Error struct {
	File      string
	Line, Col int
	Msg, Hint string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg) }

// Errors are every problem found in a file, in position order.
type Errors []*Error

func (es Errors) Error() string { return strings.Join(es.ErrorLines(), "\n") }

// ErrorLines are the errors as "file:line:col: message".
func (es Errors) ErrorLines() []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Error()
	}
	return out
}

// HintLines are the hints of the errors that have one, each once. The error
// line already says where; the hint says only what to do.
func (es Errors) HintLines() []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range es {
		if e.Hint != "" && !seen[e.Hint] {
			seen[e.Hint] = true
			out = append(out, e.Hint)
		}
	}
	return out
}

func (es Errors) sorted() Errors {
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Line != es[j].Line {
			return es[i].Line < es[j].Line
		}
		return es[i].Col < es[j].Col
	})
	return es
}

// suggest returns the known word closest to word, if it is close enough to be a typo.
func suggest(word string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := distance(word, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// distance is the Levenshtein edit distance.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
