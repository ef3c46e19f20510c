// Package progress reports how far a long read has got: on a terminal, one
// line redrawn in place with the bytes done, the rate and the time left;
// otherwise a timestamped line now and then, for logs.
package progress

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Reader counts the bytes read through it and reports them to Out.
type Reader struct {
	r     io.Reader
	out   io.Writer
	label string
	total int64 // 0 when unknown
	tty   bool
	every time.Duration
	now   func() time.Time

	mu      sync.Mutex
	done    int64
	start   time.Time
	last    time.Time
	stopped bool
}

// New returns a Reader of r, whose total size is total bytes (0 if not
// known), that reports to out under label: redrawing one line every 200ms
// when tty, else writing a timestamped line every 10s.
func New(r io.Reader, out io.Writer, label string, total int64, tty bool) *Reader {
	p := &Reader{r: r, out: out, label: label, total: total, tty: tty, every: 10 * time.Second, now: time.Now}
	if tty {
		p.every = 200 * time.Millisecond
	}
	p.start = p.now()
	p.last = p.start
	return p
}

func (p *Reader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += int64(n)
	if now := p.now(); !p.stopped && now.Sub(p.last) >= p.every {
		p.last = now
		p.report(now, false)
	}
	return n, err
}

// Done ends the report with a last line: how much was read, how fast.
func (p *Reader) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.stopped = true
	p.report(p.now(), true)
}

// report writes one line.
func (p *Reader) report(now time.Time, final bool) {
	elapsed := now.Sub(p.start)
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(p.done) / s
	}
	line := p.label + ": " + Line(p.done, p.total, rate, elapsed, final)
	if p.tty {
		end := ""
		if final {
			end = "\n"
		}
		fmt.Fprintf(p.out, "\r\x1b[K%s%s", line, end)
		return
	}
	fmt.Fprintf(p.out, "%s %s\n", now.UTC().Format(time.RFC3339), line)
}

// Line is the text of one report: "12.0 MiB of 200.0 MiB (6%), 40.0 MiB/s,
// 4s left", or, once final, "200.0 MiB in 5s, 40.0 MiB/s".
func Line(done, total int64, rate float64, elapsed time.Duration, final bool) string {
	speed := Bytes(int64(rate)) + "/s"
	if final {
		return fmt.Sprintf("%s in %s, %s", Bytes(done), elapsed.Round(100*time.Millisecond), speed)
	}
	if total <= 0 {
		return fmt.Sprintf("%s, %s", Bytes(done), speed)
	}
	pct := 100 * done / total
	left := "time left unknown"
	if rate > 0 && done <= total {
		left = time.Duration(float64(total-done)/rate*float64(time.Second)).Round(time.Second).String() + " left"
	}
	return fmt.Sprintf("%s of %s (%d%%), %s, %s", Bytes(done), Bytes(total), pct, speed, left)
}

// Bytes renders n bytes in binary units.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
