// Package terminal is what boxes does to the user's terminal: a line read
// without echo, raw mode for a session in a box, and the window size.
// Whatever it changes, it restores, a cancelled context included.
package terminal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/moby/term"
)

// ErrNotTerminal is a prompt with no terminal to ask on.
var ErrNotTerminal = errors.New("not a terminal")

// Is reports whether r is a terminal.
func Is(r any) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// Name is the TERM a terminal in a box claims: the user's, else one tmux knows.
func Name() string {
	if t := os.Getenv("TERM"); t != "" && t != "dumb" {
		return t
	}
	return "xterm-256color"
}

// Prompter reads answers typed on a terminal.
type Prompter struct {
	in    *os.File
	out   io.Writer
	lines *bufio.Reader
}

// NewPrompter asks on out and reads in, which must be a terminal
// (ErrNotTerminal otherwise).
func NewPrompter(in io.Reader, out io.Writer) (*Prompter, error) {
	f, ok := in.(*os.File)
	if !ok || !term.IsTerminal(f.Fd()) {
		return nil, ErrNotTerminal
	}
	return &Prompter{in: f, out: out, lines: bufio.NewReader(f)}, nil
}

// Secret prints prompt and reads one line with echo off. The terminal's
// state is restored when the line is read and when ctx ends first (Ctrl-C),
// which returns ctx's error.
func (p *Prompter) Secret(ctx context.Context, prompt string) (string, error) {
	fd := p.in.Fd()
	state, err := term.SaveState(fd)
	if err != nil {
		return "", err
	}
	defer term.RestoreTerminal(fd, state)
	if err := term.DisableEcho(fd, state); err != nil {
		return "", err
	}
	fmt.Fprintf(p.out, "%s: ", prompt)
	type answer struct {
		line string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		line, err := p.lines.ReadString('\n')
		got <- answer{line, err}
	}()
	select {
	case a := <-got:
		fmt.Fprintln(p.out)
		return strings.TrimRight(a.line, "\r\n"), a.err
	case <-ctx.Done():
		fmt.Fprintln(p.out)
		return "", ctx.Err()
	}
}

// Raw puts terminal in in raw mode, so keys reach a box as typed, and
// returns what restores it. What is not a terminal (tests) is left as it is.
func Raw(in io.Reader) (restore func()) {
	f, ok := in.(*os.File)
	if !ok || !term.IsTerminal(f.Fd()) {
		return func() {}
	}
	state, err := term.SetRawTerminal(f.Fd())
	if err != nil {
		return func() {}
	}
	return func() { _ = term.RestoreTerminal(f.Fd(), state) }
}

// FollowSize calls resize with the size of terminal out, now and whenever
// it changes, until ctx ends.
func FollowSize(ctx context.Context, out io.Writer, resize func(h, w uint)) {
	f, ok := out.(*os.File)
	if !ok {
		return
	}
	apply := func() {
		if ws, err := term.GetWinsize(f.Fd()); err == nil {
			resize(uint(ws.Height), uint(ws.Width))
		}
	}
	apply()
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	go func() {
		defer signal.Stop(winch)
		for {
			select {
			case <-ctx.Done():
				return
			case <-winch:
				apply()
			}
		}
	}()
}
