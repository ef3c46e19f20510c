package progress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Boxes shows one line per box as an applier works: redrawn in place on a
// terminal, else a timestamped line as each step happens.
type Boxes struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	order []string
	lines map[string]string
	drawn int
}

// NewBoxes shows the boxes named in order on w, each first as its action
// and "waiting", after a blank line.
func NewBoxes(w io.Writer, tty bool, order, actions []string) *Boxes {
	pr := &Boxes{w: w, tty: tty, order: order, lines: map[string]string{}}
	for i, name := range order {
		pr.lines[name] = actions[i] + ": waiting"
	}
	fmt.Fprintln(w)
	return pr
}

// Step shows box's step msg.
func (p *Boxes) Step(box, msg string) { p.set(box, msg) }

// Done shows that box is done, or failed with err.
func (p *Boxes) Done(box string, err error) {
	if errors.Is(err, context.Canceled) {
		// Ctrl-C or SIGTERM: the engine request it cut is no news.
		p.set(box, "interrupted")
		return
	}
	if err != nil {
		p.set(box, "failed: "+err.Error())
		return
	}
	p.set(box, "done")
}

func (p *Boxes) set(box, msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lines[box] = msg
	if !p.tty {
		fmt.Fprintf(p.w, "%s %s: %s\n", time.Now().UTC().Format(time.RFC3339), box, msg)
		return
	}
	p.redraw()
}

func (p *Boxes) redraw() {
	if p.drawn > 0 {
		fmt.Fprintf(p.w, "\x1b[%dA", p.drawn)
	}
	for _, name := range p.order {
		fmt.Fprintf(p.w, "\x1b[2K%-12s %s\n", name, p.lines[name])
	}
	p.drawn = len(p.order)
}
