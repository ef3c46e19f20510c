// Package toolstate reads a coding tool's state directory on this machine
// (Hermes's ~/.hermes, Claude Code's ~/.claude, Codex's ~/.codex) for boxes
// import: it checks the tree before anything is done to a box (Check),
// lists the credentials it holds by file name, never by value
// (Credentials), and streams it as a tar whose entries belong to the box's
// agent user (WriteTar), checking each entry again as it is read.
//
// A tree is imported only when it holds regular files, directories and
// links that stay inside it: a relative link to something in the tree is
// kept as a link; an absolute one, one that leads out of the tree (itself
// or through another link) and one that points to nothing are refused, as
// are devices, named pipes and sockets. The directory named may itself be
// a link: it is followed.
package toolstate

import (
	"fmt"
	"strings"
)

// Tool is a coding tool whose state boxes import moves into a box.
type Tool struct {
	// Name is how the command line names it.
	Name string
	// Title is how messages name it.
	Title string
	// Dir is the directory it keeps its state in, in a home: on this
	// machine (~/.hermes) and in a box (/data/home/agent/.hermes, where the
	// box's environment points the tool).
	Dir string
}

// Tools are the tools boxes import knows, by name.
var Tools = []Tool{
	{Name: "hermes", Title: "Hermes", Dir: ".hermes"},
	{Name: "claude", Title: "Claude Code", Dir: ".claude"},
	{Name: "codex", Title: "Codex", Dir: ".codex"},
}

// Names are the tools' names, as a message lists them: "hermes, claude or
// codex".
func Names() string {
	names := make([]string, len(Tools))
	for i, t := range Tools {
		names[i] = t.Name
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Named is the tool called name.
func Named(name string) (Tool, error) {
	for _, t := range Tools {
		if t.Name == name {
			return t, nil
		}
	}
	return Tool{}, fmt.Errorf("%q is not a tool boxes imports the state of; the tools are %s", name, Names())
}
