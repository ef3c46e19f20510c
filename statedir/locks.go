package statedir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hermes-box/boxes/internal/hint"
)

// ErrLocked is returned when another boxes process holds a lock.
var ErrLocked = hint.New("locked", "wait for it to finish; a killed boxes process releases its lock by itself")

// FileLock is an exclusive, non-blocking lock on a file under .boxes/. The
// kernel drops it when the process dies, so a killed apply never leaves it held.
type FileLock struct {
	f *os.File
}

// LockApply takes the one-apply-at-a-time lock of the boxes.yaml at configPath.
func LockApply(configPath, what string) (*FileLock, error) {
	return lockFile(Beside(configPath).ApplyLock(), what)
}

// LockBox takes the per-box lock of box name.
func LockBox(configPath, name, what string) (*FileLock, error) {
	return lockFile(Beside(configPath).BoxLock(name), what)
}

func lockFile(path, what string) (*FileLock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			// The holder writes its line just after taking the lock: give
			// it a moment before saying who it is.
			h := readHolder(path)
			for i := 0; h == "" && i < 20; i++ {
				time.Sleep(10 * time.Millisecond)
				h = readHolder(path)
			}
			if h == "" {
				h = "another boxes process"
			}
			return nil, fmt.Errorf("%w: %s is held by %s", ErrLocked, path, h)
		}
		return nil, err
	}
	host, _ := os.Hostname()
	if err := f.Truncate(0); err == nil {
		fmt.Fprintf(f, "%s (pid %d on %s, since %s)\n", what, os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))
		_ = f.Sync()
	}
	return &FileLock{f: f}, nil
}

func readHolder(path string) string {
	data, _ := os.ReadFile(path)
	return strings.TrimSpace(string(data))
}

// Unlock releases the lock.
func (l *FileLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = l.f.Truncate(0)
	err := l.f.Close()
	l.f = nil
	return err
}

// holderLine matches what lockFile writes: "WHAT (pid N on HOST, since T)".
var holderLine = regexp.MustCompile(`^(.*) \(pid (\d+) on ([^,]+), since [^)]*\)$`)

// BoxHolder names the other boxes process that holds box name's lock (e.g.
// "boxes apply (pid 42 on vm, since …)"), or "" when none does: read, never
// taken, so that asking cannot make the holder's own attempt fail. A line a
// killed process left behind is not a holder.
func BoxHolder(configPath, name string) string {
	line := readHolder(Beside(configPath).BoxLock(name))
	m := holderLine.FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	pid, _ := strconv.Atoi(m[2])
	if host, _ := os.Hostname(); m[3] == host {
		if pid == os.Getpid() || !alive(pid) {
			return ""
		}
	}
	return line
}

// alive reports whether process pid exists on this machine.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
