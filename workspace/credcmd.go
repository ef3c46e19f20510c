package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hermes-box/boxes/internal/text"
)

// CommandTimeout bounds how long a credential's cmd: runs before it is
// stopped (its whole process group) and its credential fails.
var CommandTimeout = 30 * time.Second

// maxCommandOutput is the most a credential's command may print: far more
// than a header carries.
const maxCommandOutput = 64 << 10

// commands are the credentials' cmd: run by one workspace, by command: each
// runs at most once, so that a fleet whose boxes share one runs it once,
// and apply forwards the value its plan compared.
type commands struct {
	mu   sync.Mutex
	runs map[string]*commandRun
}

type commandRun struct {
	once  sync.Once
	value string
	err   error
}

// output is what command prints, run in dir (see runCommand), once.
func (c *commands) output(ctx context.Context, command, dir string) (string, error) {
	c.mu.Lock()
	if c.runs == nil {
		c.runs = map[string]*commandRun{}
	}
	r, ok := c.runs[command]
	if !ok {
		r = &commandRun{}
		c.runs[command] = r
	}
	c.mu.Unlock()
	r.once.Do(func() { r.value, r.err = runCommand(ctx, command, dir) })
	return r.value, r.err
}

// runCommand runs command with sh -c in dir, on this machine, with
// nothing on its standard input and boxes's environment, for at most
// CommandTimeout, and returns what it printed on its standard output
// without one trailing line break. sh, so that a command may be a
// pipeline or use a variable, as a git credential helper may. Its errors
// name the command as from: writes it, and end with the last line of its
// standard error; they never hold what it printed on its standard output.
func runCommand(ctx context.Context, command, dir string) (string, error) {
	from := "cmd:" + command
	run, cancel := context.WithTimeout(ctx, CommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(run, "sh", "-c", command)
	cmd.Dir = dir
	out := &capped{max: maxCommandOutput}
	errOut := &capped{max: maxCommandOutput}
	cmd.Stdout, cmd.Stderr = out, errOut
	// Its own process group, stopped whole: a pipeline's other processes
	// would otherwise keep its output open past the timeout.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	value := strings.TrimSuffix(strings.TrimSuffix(out.String(), "\n"), "\r")
	why := lastLine(errOut.String(), out.String())
	switch {
	case ctx.Err() != nil:
		return "", ctx.Err()
	case errors.Is(run.Err(), context.DeadlineExceeded):
		return "", fmt.Errorf("%s did not finish within %s, and was stopped%s", from, CommandTimeout, why)
	case err != nil:
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.Exited() {
			return "", fmt.Errorf("%s failed (exit %d)%s", from, exit.ExitCode(), why)
		}
		return "", fmt.Errorf("%s failed: %v%s", from, err, why)
	case out.over:
		return "", fmt.Errorf("%s printed more than %d KiB, more than a header carries", from, maxCommandOutput>>10)
	case value == "":
		return "", fmt.Errorf("%s printed nothing on its standard output%s", from, why)
	}
	return value, nil
}

// lastLine is ": " and the last line a command wrote on its standard error,
// printable and short, with anything it printed on its standard output
// taken out of it; "" for none.
func lastLine(stderr, stdout string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	line := strings.TrimSpace(lines[len(lines)-1])
	if line == "" {
		return ""
	}
	// A command that echoes its secret on failure keeps it to itself.
	if printed := strings.TrimSpace(stdout); printed != "" {
		line = strings.ReplaceAll(line, printed, "[its output]")
	}
	line = text.Printable(line)
	if r := []rune(line); len(r) > 200 {
		line = string(r[:200]) + "…"
	}
	return ": " + line
}

// capped keeps what is written to it up to max bytes, and whether more came.
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); len(p) > room {
		c.over = true
		c.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return c.buf.Write(p)
}

func (c *capped) String() string { return c.buf.String() }
