// Package hb is the host side of the guest contract: the names of hb's
// markers and /data layout, and quiesce, resume, wait-for-init and doctor,
// run through a small exec interface. guest/hb is the other side; a test
// checks the names here against its text.
package hb

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
)

const (
	// Path is hb in the image: the entrypoint of both services.
	Path = compose.HB
	// Data is the agent volume's mount point: the box.
	Data = "/data"
	// QuiescedMarker is hb's quiesce marker (hb's QUIESCED), as a tar entry
	// relative to /: while it exists, hb init waits for hb resume.
	QuiescedMarker = "data/.hb/quiesced"
	// AgentUser is the box's own user (hb's AGENT); AgentUID its user and
	// group ID in the image (provision's AGENT_UID).
	AgentUser = "agent"
	AgentUID  = 1000
	// AgentHome is the agent's home as a tar entry relative to /.
	AgentHome = "data/home/agent"
	// AgentService is the service whose health hb health checks for init.
	AgentService = compose.AgentService
)

// run runs hb ARGS as user and returns what it printed.
func run(ctx context.Context, r engine.Runner, id, user string, args ...string) (stdout []byte, stderr string, code int, err error) {
	var out, errb bytes.Buffer
	code, err = r.Run(ctx, id, user, append([]string{Path}, args...), &out, &errb)
	return out.Bytes(), strings.TrimSpace(errb.String()), code, err
}

// root runs hb ARGS as root; a non-zero exit is an error.
func root(ctx context.Context, r engine.Runner, id string, args ...string) error {
	_, stderr, code, err := run(ctx, r, id, "root", args...)
	if err == nil && code != 0 {
		err = fmt.Errorf("hb %s exited %d: %s", strings.Join(args, " "), code, stderr)
	}
	return err
}

// Quiesce freezes the box's agent processes and writes the marker.
func Quiesce(ctx context.Context, r engine.Runner, id string) error {
	return root(ctx, r, id, "quiesce")
}

// Resume removes the marker and thaws the box's processes.
func Resume(ctx context.Context, r engine.Runner, id string) error { return root(ctx, r, id, "resume") }

// ErrNotReady is returned when hb init has not finished in time.
var ErrNotReady = errors.New("hb init has not finished")

// NotReadyError is a box whose hb init did not finish in time.
type NotReadyError struct {
	Box     string
	Timeout time.Duration
	Detail  string
}

func (e *NotReadyError) Error() string {
	return fmt.Sprintf("box %s is not ready after %s: %s", e.Box, e.Timeout, e.Detail)
}

// Hint is where to look.
func (e *NotReadyError) Hint() string {
	return fmt.Sprintf("boxes logs %s shows what hb init is doing", e.Box)
}
func (e *NotReadyError) Unwrap() error { return ErrNotReady }

// Wait tunes WaitInit.
type Wait struct {
	Timeout time.Duration
	// Poll is the time between two probes.
	Poll time.Duration
	// Waiting is called once, after a second, if init is still running: the
	// caller says so wherever it shows progress.
	Waiting func()
}

// WaitInit returns once hb init has laid out the box's /data (hb health
// agent passes): right after a create, init may still be running.
func WaitInit(ctx context.Context, r engine.Runner, box, id string, w Wait) error {
	if w.Poll == 0 {
		w.Poll = 200 * time.Millisecond
	}
	deadline := time.Now().Add(w.Timeout)
	told := false
	for start := time.Now(); ; {
		_, stderr, code, err := run(ctx, r, id, "root", "health", AgentService)
		switch {
		case err != nil:
			return err
		case code == 0:
			return nil
		case time.Now().After(deadline):
			return &NotReadyError{Box: box, Timeout: w.Timeout, Detail: stderr}
		case !told && time.Since(start) > time.Second:
			if w.Waiting != nil {
				w.Waiting()
			}
			told = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(w.Poll):
		}
	}
}

// Check is one finding of hb doctor (and of boxes doctor, which adds Where).
type Check struct {
	Where    string `json:"where"` // host or box
	Name     string `json:"name"`
	OK       bool   `json:"ok"`
	Severity string `json:"severity"` // ok, warn or error
	Detail   string `json:"detail"`
}

// Doctor runs hb doctor --json as the agent user and returns its checks. A
// report that cannot be had, or whose exit code disagrees with it, is one
// failed check.
func Doctor(ctx context.Context, r engine.Runner, id string) []Check {
	fail := func(format string, args ...any) []Check {
		return []Check{{Where: "box", Name: "hb doctor", Severity: "error", Detail: fmt.Sprintf(format, args...)}}
	}
	out, stderr, code, err := run(ctx, r, id, AgentUser, "doctor", "--json")
	if err != nil {
		return fail("could not run: %v", err)
	}
	var inner struct {
		OK     bool    `json:"ok"`
		Checks []Check `json:"checks"`
	}
	if err := json.Unmarshal(out, &inner); err != nil || len(inner.Checks) == 0 {
		return fail("exit %d without a report: %s", code, stderr)
	}
	checks := make([]Check, 0, len(inner.Checks)+1)
	for _, c := range inner.Checks {
		c.Where = "box"
		checks = append(checks, c)
	}
	if inner.OK != (code == 0) {
		checks = append(checks, fail("exit %d disagrees with its report (ok=%v)", code, inner.OK)...)
	}
	return checks
}

// WriteMarker writes the quiesce marker to tw, as entries of a tar to copy
// to / of a created, not yet started agent container ahead of a restore's
// data: should the restore stop half-way, the box comes up quiesced
// instead of running on part of it.
func WriteMarker(tw *tar.Writer, why string) error {
	now := time.Now().UTC()
	stamp := []byte(now.Format(time.RFC3339) + " " + why + "\n")
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "data/.hb/", Mode: 0o755, ModTime: now}); err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: QuiescedMarker, Mode: 0o644, Size: int64(len(stamp)), ModTime: now}); err != nil {
		return err
	}
	_, err := tw.Write(stamp)
	return err
}

// Session is the agent's tmux session that boxes enter attaches to.
const Session = "main"

// Attach is what boxes enter runs, as AgentUser with a terminal: tmux
// session Session, made first when the box has none yet.
func Attach() []string { return InHome("tmux", "new-session", "-A", "-s", Session) }

// InHome is cmd run from the agent's home when it exists: right after a
// create hb init may not have made it yet, and a missing working directory
// would fail the exec itself.
func InHome(cmd ...string) []string {
	return append([]string{"sh", "-c", `cd 2>/dev/null; exec "$@"`, "sh"}, cmd...)
}

// VersionsCmd is the command that prints the tools of an image, as JSON:
// run by an engine's ToolVersions in a throwaway container of the image.
var VersionsCmd = []string{Path, "versions", "--json"}

// ParseVersions reads what VersionsCmd printed: tool → version, for the
// tools it found.
func ParseVersions(out []byte) (map[string]string, error) {
	var raw map[string]any
	if err := json.Unmarshal(out, &raw); err != nil {
		return nil, fmt.Errorf("hb versions --json: %w", err)
	}
	tools := map[string]string{}
	for k, v := range raw {
		if s, ok := v.(string); ok && s != "" {
			tools[k] = s
		}
	}
	return tools, nil
}
