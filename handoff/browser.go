package handoff

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// EnvBrowser names the browser command; the URL is its last argument.
const EnvBrowser = "BOXES_BROWSER"

// NoBrowserError is a platform opener that is not installed, with no
// EnvBrowser set.
type NoBrowserError struct{ Opener string }

func (e *NoBrowserError) Error() string {
	return fmt.Sprintf("no browser: %s is not installed and %s is not set", e.Opener, EnvBrowser)
}

// Hint is what to do about it.
func (e *NoBrowserError) Hint() string {
	return "set " + EnvBrowser + " to the browser's command, e.g. " + EnvBrowser + "=firefox"
}

// Browser is $BOXES_BROWSER split into words, else the platform's opener.
func Browser() ([]string, error) {
	if b := strings.Fields(os.Getenv(EnvBrowser)); len(b) > 0 {
		return b, nil
	}
	opener := "xdg-open"
	if runtime.GOOS == "darwin" {
		opener = "open"
	}
	if _, err := exec.LookPath(opener); err != nil {
		return nil, &NoBrowserError{Opener: opener}
	}
	return []string{opener}, nil
}

// Open runs browser on a one-time loopback address that sends it on to
// target, and waits up to timeout for it to be fetched. The browser is
// never given target itself: a command line is readable by every user of
// the machine. What the browser command prints goes to w.
func Open(ctx context.Context, target string, browser []string, w io.Writer, timeout time.Duration) error {
	h, err := New(target)
	if err != nil {
		return err
	}
	defer h.Close()
	run := exec.Command(browser[0], append(browser[1:], h.URL)...)
	run.Stdin, run.Stdout, run.Stderr = nil, w, w
	if err := run.Run(); err != nil {
		return fmt.Errorf("%s: %w", browser[0], err)
	}
	return h.Wait(ctx, timeout)
}
