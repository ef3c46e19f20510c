package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// document reads the one YAML document of data. What yaml.v3 reports
// without a position (a character YAML refuses, an unknown alias), or at
// a line counted from 0 (its parser's errors), is reported at the place
// it is; a second document, which yaml.v3 would read as a file of its own
// and boxes would drop, is refused where it starts.
func (p *parser) document(data []byte) (*yaml.Node, bool) {
	if p.badText(data) {
		return nil, false
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		p.syntaxError(data, err, false)
		return nil, false
	}
	for {
		var more yaml.Node
		err := dec.Decode(&more)
		if errors.Is(err, io.EOF) {
			return &doc, true
		}
		if err != nil {
			p.syntaxError(data, err, true)
			return nil, false
		}
		// A "---" with nothing after it (or only comments) drops nothing.
		if !emptyDocument(&more) {
			p.secondDocument(more.Line, more.Column)
			return nil, false
		}
	}
}

// secondDocument refuses a second YAML document, starting at line:col.
func (p *parser) secondDocument(line, col int) {
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Col: col,
		Hint: "keep one document: merge what follows into the first part, or remove it",
		Msg:  fmt.Sprintf("a second YAML document starts here; %s is one document", displayName(p.file))})
}

// emptyDocument reports whether doc holds nothing: no node, or the null a
// document of only "---" and comments reads as.
func emptyDocument(doc *yaml.Node) bool {
	if len(doc.Content) == 0 {
		return true
	}
	n := doc.Content[0]
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null" && n.Value == ""
}

// badText reports the first byte that is not UTF-8, or the first
// character YAML does not allow in a file (a control character, such as
// the NUL bytes of a file saved as UTF-16), at its line and column (in
// characters, as editors and YAML count them): yaml.v3 would only say
// "invalid UTF-8" or "control characters are not allowed", without a
// position.
func (p *parser) badText(data []byte) bool {
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			p.errs = append(p.errs, &Error{File: p.file, Line: line, Col: col,
				Msg: fmt.Sprintf("byte 0x%02x is not UTF-8", data[i]), Hint: "save the file as UTF-8"})
			return true
		case !yamlChar(r):
			p.errs = append(p.errs, &Error{File: p.file, Line: line, Col: col,
				Msg:  fmt.Sprintf("character U+%04X is not allowed in YAML", r),
				Hint: "remove it (YAML allows no control character but tab and line breaks); a file saved as UTF-16 must be saved as UTF-8"})
			return true
		}
		col++
		if n := lineBreak(data[i:]); n > 0 {
			line, col = line+1, 1
			size = n
		}
		i += size
	}
	return false
}

// yamlChar reports whether YAML allows r in a file: tab, line feed,
// carriage return, printable ASCII, NEL and the rest of Unicode but the
// C1 controls, surrogates and U+FFFE/U+FFFF (the set yaml.v3's reader
// checks).
func yamlChar(r rune) bool {
	switch {
	case r == 0x09, r == 0x0A, r == 0x0D, r >= 0x20 && r <= 0x7E, r == 0x85:
		return true
	case r >= 0xA0 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD, r >= 0x10000 && r <= 0x10FFFF:
		return true
	}
	return false
}

// lineBreak is the length of the line break data starts with, 0 if none:
// YAML ends a line at \r\n, \r, \n, NEL, LS or PS.
func lineBreak(data []byte) int {
	switch {
	case bytes.HasPrefix(data, []byte("\r\n")):
		return 2
	case data[0] == '\r', data[0] == '\n':
		return 1
	case bytes.HasPrefix(data, []byte("\u0085")):
		return 2
	case bytes.HasPrefix(data, []byte("\u2028")), bytes.HasPrefix(data, []byte("\u2029")):
		return 3
	}
	return 0
}

// lines are data's lines as YAML counts them, without their breaks.
func lines(data []byte) []string {
	var out []string
	start := 0
	for i := 0; i < len(data); {
		if n := lineBreak(data[i:]); n > 0 {
			out = append(out, string(data[start:i]))
			i += n
			start = i
			continue
		}
		i++
	}
	return append(out, string(data[start:]))
}

var (
	syntaxLine    = regexp.MustCompile(`line (\d+)`)
	unknownAnchor = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)
)

// parserProblems are the errors of yaml.v3's parser, as opposed to its
// scanner's. yaml.v3 counts the lines of the scanner's from 1 and those of
// the parser's from 0, and names no line when the place is on the first.
var parserProblems = []string{
	"did not find expected <stream-start>",
	"did not find expected <document start>",
	"did not find expected node content",
	"did not find expected '-' indicator",
	"did not find expected key",
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"found undefined tag handle",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found duplicate %TAG directive",
}

// syntaxError reports a yaml.v3 error at its place in data: the line
// yaml.v3 means, and where the error is about something opened earlier on
// it (a flow mapping or list, a quoted string) its column. following is
// true for the error of a document after the first.
func (p *parser) syntaxError(data []byte, err error, following bool) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line, named := 1, false
	if m := syntaxLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = strings.TrimSpace(strings.Replace(msg, m[0]+":", "", 1))
		named = true
	}
	parserError := contains(parserProblems, msg)
	if named && parserError {
		line++
	}
	text := lines(data)
	col, hint := 1, ""
	switch msg {
	case "did not find expected ',' or '}'", "did not find expected ',' or ']'":
		// The line is the flow collection's, or when that is on the first
		// line, the one the parser stopped on.
		open := '{'
		if strings.HasSuffix(msg, "']'") {
			open = '['
		}
		for _, l := range []int{line, 1} {
			if c := openedOn(text, l, open); c > 0 {
				line, col = l, c
				break
			}
		}
	case "found unexpected end of stream":
		if c := openedOn(text, line, '"'); c > 0 {
			col = c
		} else if c := openedOn(text, line, '\''); c > 0 {
			col = c
		}
	case "did not find expected alphabetic or numeric character":
		// An alias whose name YAML refuses: an unquoted wildcard
		// destination, *.github.com, reads as one.
		if line <= len(text) {
			_, aliases := flowScan(text[line-1])
			for _, a := range aliases {
				if strings.HasPrefix(a.name, ".") {
					col, hint = a.col, fmt.Sprintf("quote a wildcard destination: %q", "*"+a.name)
					break
				}
			}
		}
	case "did not find expected <document start>":
		if following {
			p.secondDocument(line, col)
			return
		}
	}
	if m := unknownAnchor.FindStringSubmatch(msg); m != nil && !named {
		line, col = aliasOf(text, m[1])
	}
	if line > len(text) {
		line = len(text)
	}
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Col: col, Msg: "YAML syntax error: " + msg, Hint: hint})
}

// token is one thing flowScan found on a line: a flow indicator or quote
// outside quotes, or an alias.
type token struct {
	r   rune
	col int
	// name is an alias's name.
	name string
}

// flowScan reads one line as YAML would, as far as a line can be read on
// its own: the flow collections and quoted strings still open at its end,
// innermost last, and the aliases on it. It stops at a comment, or at a
// closing bracket that closes nothing open (where the parser stopped).
func flowScan(line string) (open []token, aliases []token) {
	rs := []rune(line)
	prev := rune(0) // the last rune outside quotes that is not a space
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		col := i + 1
		space := i == 0 || rs[i-1] == ' ' || rs[i-1] == '\t'
		switch {
		case r == '#' && space:
			return open, aliases
		case r == '"' || r == '\'':
			// A quote opens a string only where a value starts.
			if prev != 0 && !strings.ContainsRune("{[,:-?", prev) {
				break
			}
			end := closeQuote(rs, i)
			if end < 0 {
				return append(open, token{r: r, col: col}), aliases
			}
			i = end
		case r == '{' || r == '[':
			open = append(open, token{r: r, col: col})
		case r == '}' || r == ']':
			want := '{'
			if r == ']' {
				want = '['
			}
			if len(open) == 0 || open[len(open)-1].r != want {
				return open, aliases
			}
			open = open[:len(open)-1]
		case r == '*' && (prev == 0 || strings.ContainsRune("{[,:-?", prev) || space):
			j := i + 1
			for j < len(rs) && !strings.ContainsRune(" \t,[]{}", rs[j]) {
				j++
			}
			aliases = append(aliases, token{r: r, col: col, name: string(rs[i+1 : j])})
			i = j - 1
		}
		if r != ' ' && r != '\t' {
			prev = r
		}
	}
	return open, aliases
}

// closeQuote is the index of the quote that closes the one at rs[i], -1
// when the line ends first.
func closeQuote(rs []rune, i int) int {
	q := rs[i]
	for j := i + 1; j < len(rs); j++ {
		switch {
		case q == '"' && rs[j] == '\\':
			j++
		case q == '\'' && rs[j] == '\'' && j+1 < len(rs) && rs[j+1] == '\'':
			j++
		case rs[j] == q:
			return j
		}
	}
	return -1
}

// openedOn is the column of the innermost opening r ('{', '[' or a quote)
// still open at the end of line n (from 1) of text, 0 if none.
func openedOn(text []string, n int, r rune) int {
	if n < 1 || n > len(text) {
		return 0
	}
	open, _ := flowScan(text[n-1])
	for i := len(open) - 1; i >= 0; i-- {
		if open[i].r == r {
			return open[i].col
		}
	}
	return 0
}

// aliasOf is where the first alias of name is, or 1:1.
func aliasOf(text []string, name string) (line, col int) {
	for i, l := range text {
		_, aliases := flowScan(l)
		for _, a := range aliases {
			if a.name == name {
				return i + 1, a.col
			}
		}
	}
	return 1, 1
}
