package progress

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

func TestLine(t *testing.T) {
	for _, tc := range []struct {
		done, total int64
		rate        float64
		final       bool
		want        string
	}{
		{50 << 20, 200 << 20, 10 << 20, false, "50.0 MiB of 200.0 MiB (25%), 10.0 MiB/s, 15s left"},
		{5 << 10, 0, 1 << 10, false, "5.0 KiB, 1.0 KiB/s"},
		{0, 100, 0, false, "0 B of 100 B (0%), 0 B/s, time left unknown"},
		{200 << 20, 200 << 20, 40 << 20, true, "200.0 MiB in 5s, 40.0 MiB/s"},
	} {
		if got := Line(tc.done, tc.total, tc.rate, 5*time.Second, tc.final); got != tc.want {
			t.Errorf("Line(%d, %d, %v) = %q, want %q", tc.done, tc.total, tc.rate, got, tc.want)
		}
	}
}

// clock is a fake time that advances a second on each reading.
func clock() func() time.Time {
	t := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Second); return t }
}

func TestReaderLog(t *testing.T) {
	var out bytes.Buffer
	p := New(strings.NewReader(strings.Repeat("x", 4096)), &out, "verifying a", 4096, false)
	p.now, p.every = clock(), 2*time.Second
	p.start, p.last = p.now(), p.now()
	buf := make([]byte, 1024)
	for {
		if _, err := p.Read(buf); err == io.EOF {
			break
		}
	}
	p.Done()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 2 {
		t.Fatalf("got %q, want timestamped lines", out.String())
	}
	if !strings.HasPrefix(lines[0], "2026-01-02T03:04:") || !strings.Contains(lines[0], "verifying a: ") || !strings.Contains(lines[0], "left") {
		t.Errorf("first line %q", lines[0])
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "4.0 KiB in ") {
		t.Errorf("last line %q", last)
	}
}

func TestReaderTTY(t *testing.T) {
	var out bytes.Buffer
	p := New(strings.NewReader(strings.Repeat("x", 3000)), &out, "extracting", 3000, true)
	p.now = clock()
	io.Copy(io.Discard, p)
	p.Done()
	s := out.String()
	if !strings.HasPrefix(s, "\r\x1b[K") || !strings.HasSuffix(s, "\n") || strings.Count(s, "\n") != 1 {
		t.Errorf("tty output %q: want lines redrawn in place and one newline at the end", s)
	}
}
