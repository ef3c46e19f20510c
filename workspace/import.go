package workspace

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/internal/text"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/snapshot"
	"github.com/hermes-box/boxes/toolstate"
)

// boxes import: a coding tool's state, from a directory of this machine,
// into the place in a box's /data where the box points the tool.

// StateDir is where a box keeps tool's state.
func StateDir(tool toolstate.Tool) string { return compose.AgentHome + "/" + tool.Dir }

// Held is what a box holds where an import puts a tool's state.
type Held struct {
	// Kind is "" when nothing is there, else "directory", "link" or "file".
	Kind string `json:"kind,omitempty"`
	// Entries and Bytes are what a directory holds, at any depth, and the
	// size of its files.
	Entries int   `json:"entries,omitempty"`
	Bytes   int64 `json:"bytes,omitempty"`
}

// Replaced reports whether putting state there replaces something: only
// nothing and an empty directory (as hb init lays it out) are not.
func (h Held) Replaced() bool { return h.Kind != "" && (h.Kind != "directory" || h.Entries > 0) }

func (h Held) String() string {
	switch h.Kind {
	case "":
		return "nothing"
	case "directory":
		return text.Plural(h.Entries, "entry", "entries") + " (" + text.Size(h.Bytes) + " of files)"
	}
	return "a " + h.Kind
}

// Importing is what boxes import does to a box, found under the box's
// lock before anything changes.
type Importing struct {
	Box, Host string
	Tool      toolstate.Tool
	// Path is where the state goes in the box.
	Path string
	// Running is a box that runs now: it is stopped for the import and
	// started again.
	Running bool
	// UID and GID are the box's agent user's, read in the box's own image.
	UID, GID int
	// Held is what the box holds at Path now.
	Held Held
	// Snapshot labels the snapshot of /data made before anything is
	// replaced, when Held is; "" when nothing is.
	Snapshot string
	image    string
	agent    engine.Container
	r        engine.Resources
}

// NoHomeError is a box whose hb init has never laid out the agent's home.
type NoHomeError struct{ Box string }

func (e *NoHomeError) Error() string {
	return fmt.Sprintf("box %s has no home for %s in its /data yet (%s): its hb init has not run; nothing was changed", e.Box, hb.AgentUser, compose.AgentHome)
}

// Hint is how to get one.
func (e *NoHomeError) Hint() string {
	return fmt.Sprintf("boxes start %s lays it out; then import again", e.Box)
}

// LockedImport takes box name's lock, observes only its host, and finds
// what importing tool's state into it does: what the box holds there now,
// read with a helper container on the box's own image, and the agent
// user's IDs in that image. It refuses a box that is another fleet's,
// undeclared, without /data or an agent container, paused or restarting,
// or whose agent's home is not laid out yet, before anything changes. A
// running box is waited for until its hb init has finished (wait).
func (w *Workspace) LockedImport(ctx context.Context, name string, tool toolstate.Tool, wait hb.Wait, now func() time.Time) (*Importing, error) {
	if now == nil {
		now = time.Now
	}
	host, r, err := w.lockBoxWithData(ctx, name, "boxes import")
	if err != nil {
		return nil, err
	}
	agent, ok := r.Container(compose.AgentService)
	if !ok {
		return nil, &NoContainerError{Box: name, Service: compose.AgentService}
	}
	if agent.State.Alive() && agent.State != engine.Running {
		return nil, &NotRunningError{Box: name, Service: compose.AgentService, State: agent.State}
	}
	image, err := w.helperImage(host, name, r)
	if err != nil {
		return nil, err
	}
	e, err := w.Engine(ctx, host)
	if err != nil {
		return nil, err
	}
	im := &Importing{Box: name, Host: host, Tool: tool, Path: StateDir(tool), Running: agent.State == engine.Running, image: image, agent: agent, r: r}
	if im.Running && agent.Health != engine.Healthy {
		if err := hb.WaitInit(ctx, e, name, agent.ID, wait); err != nil {
			return nil, err
		}
	}
	out, err := e.RunHelper(ctx, engine.Helper{Box: name, Image: image,
		Mounts: []engine.HelperMount{{Volume: compose.VolumeName(name, compose.AgentVolume), Target: hb.Data, ReadOnly: true}},
		Cmd:    []string{"sh", "-c", probeScript, "sh", compose.AgentHome, hb.AgentUser, tool.Dir}})
	if err == nil {
		err = im.readProbe(out)
	}
	if err != nil {
		var home *NoHomeError
		if errors.As(err, &home) {
			return nil, err
		}
		return nil, fmt.Errorf("reading what box %s holds at %s: %w; nothing was changed", name, im.Path, err)
	}
	if im.Held.Replaced() {
		im.Snapshot = w.freeLabel(host, name, "before-import-"+tool.Name+"-", now)
		if err := w.labelFree(host, name, im.Snapshot); err != nil {
			return nil, err
		}
	}
	return im, nil
}

// probeScript prints, for home "$1", user "$2" and the tool's directory
// "$3" there, "nohome" when home is not a directory, else the user's IDs
// and what is at the tool's directory: none, link, file or directory,
// followed for a directory by a line of its entries and its files' bytes.
// A directory left aside by a place cut short (see placeScript) is what is
// there when nothing else is.
const probeScript = `set -eu
home=$1 user=$2 dir=$1/$3
old=$dir.boxes-replaced
if [ -L "$home" ] || [ ! -d "$home" ]; then echo nohome; exit 0; fi
uid=$(id -u "$user")
gid=$(id -g "$user")
at=$dir
if [ ! -e "$dir" ] && [ ! -L "$dir" ] && { [ -e "$old" ] || [ -L "$old" ]; }; then at=$old; fi
if [ -L "$at" ]; then kind=link
elif [ -d "$at" ]; then kind=directory
elif [ -e "$at" ]; then kind=file
else kind=none; fi
echo "$uid $gid $kind"
if [ "$kind" = directory ]; then
	find "$at" -mindepth 1 -printf '%y %s\n' | awk '{ n++ } $1 == "f" { b += $2 } END { printf "%.0f %.0f\n", n, b }'
fi
`

// readProbe reads what probeScript printed.
func (im *Importing) readProbe(out []byte) error {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if lines[0] == "nohome" {
		return &NoHomeError{Box: im.Box}
	}
	bad := fmt.Errorf("the helper printed %q", out)
	f := strings.Fields(lines[0])
	if len(f) != 3 {
		return bad
	}
	var err1, err2 error
	im.UID, err1 = strconv.Atoi(f[0])
	im.GID, err2 = strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return bad
	}
	switch f[2] {
	case "none":
	case "link", "file":
		im.Held.Kind = f[2]
	case "directory":
		im.Held.Kind = f[2]
		if len(lines) != 2 {
			return bad
		}
		n := strings.Fields(lines[1])
		var err error
		if len(n) != 2 {
			return bad
		}
		if im.Held.Entries, err1 = strconv.Atoi(n[0]); err1 != nil {
			return bad
		}
		if im.Held.Bytes, err = strconv.ParseInt(n[1], 10, 64); err != nil {
			return bad
		}
	default:
		return bad
	}
	return nil
}

// WriteText says what importing tree does, before it is confirmed.
func (im *Importing) WriteText(w io.Writer, tree *toolstate.Tree) {
	fmt.Fprintf(w, "%s's state from %s (%s) goes to box %s's %s, owned by %s (%d:%d), modes and times kept\n",
		im.Tool.Title, text.Printable(tree.Shown), treeSummary(tree), im.Box, im.Path, hb.AgentUser, im.UID, im.GID)
	switch {
	case im.Held.Replaced():
		fmt.Fprintf(w, "box %s's %s holds %s now: it is replaced; snapshot %s keeps the box's /data as it was (boxes revert %s %s puts it back)\n",
			im.Box, im.Path, im.Held, im.Snapshot, im.Box, im.Snapshot)
	case im.Held.Kind == "":
		fmt.Fprintf(w, "box %s has no %s yet\n", im.Box, im.Path)
	default:
		fmt.Fprintf(w, "box %s's %s is empty\n", im.Box, im.Path)
	}
	if im.Running {
		fmt.Fprintf(w, "box %s is stopped for it, then started again; it keeps its token\n", im.Box)
	} else {
		fmt.Fprintf(w, "box %s is not running and stays stopped\n", im.Box)
	}
}

// treeSummary is what tree holds, in words.
func treeSummary(t *toolstate.Tree) string {
	parts := []string{text.Plural(t.Files, "file", "files"), text.Plural(t.Dirs, "directory", "directories")}
	if t.Links > 0 {
		parts = append(parts, text.Plural(t.Links, "link", "links"))
	}
	return strings.Join(parts, ", ") + ", " + text.Size(t.Bytes)
}

// ImportFormat is the format_version of ImportResult's JSON.
const ImportFormat = 1

// ImportResult is what boxes import prints with --json (format_version
// ImportFormat).
type ImportResult struct {
	FormatVersion int    `json:"format_version"`
	Box           string `json:"box"`
	Host          string `json:"host"` // "" is the local engine
	// State is the box's afterwards: running or stopped.
	State string `json:"state"`
	Tool  string `json:"tool"`
	// From is the directory read on this machine; Path where it went.
	From  string `json:"from"`
	Path  string `json:"path"`
	Files int    `json:"files"`
	Dirs  int    `json:"dirs"`
	Links int    `json:"links"`
	Bytes int64  `json:"bytes"`
	UID   int    `json:"uid"`
	GID   int    `json:"gid"`
	// Replaced is what the box held there before; Snapshot the snapshot
	// that keeps it, when something was replaced.
	Replaced Held   `json:"replaced"`
	Snapshot string `json:"snapshot,omitempty"`
	// Credentials are those the imported state holds, by file, never by
	// value.
	Credentials []toolstate.Finding `json:"credentials"`
	// title is the tool's, as the text names it.
	title string
}

// WriteText writes what the import did.
func (r ImportResult) WriteText(w io.Writer) {
	fmt.Fprintf(w, "imported %s's state into %s's %s: %s; it is %s\n", r.title, r.Box, r.Path,
		treeSummary(&toolstate.Tree{Files: r.Files, Dirs: r.Dirs, Links: r.Links, Bytes: r.Bytes}), r.State)
	if r.Snapshot != "" {
		fmt.Fprintf(w, "what it replaced is in snapshot %s: boxes revert %s %s puts the box's /data back as it was\n", r.Snapshot, r.Box, r.Snapshot)
	}
}

// ImportOptions are what an import asks of its caller.
type ImportOptions struct {
	// Apply runs the box's stop and start.
	Apply ApplyOptions
	// Step reports progress; Warn a problem that does not fail the import.
	Step func(msg string)
	Warn func(format string, args ...any)
	// Content, when set, wraps the reader of the files' bytes as they are
	// copied: a progress meter; Copied, when set, is called once they all
	// are, the copy whole.
	Content func(io.Reader) io.Reader
	Copied  func()
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// ImportError is an import that failed once the box was stopped for it:
// what failed, and what it left.
type ImportError struct {
	Box  string
	Tool toolstate.Tool
	Err  error
	// Left says what the import left; Stopped is a box it left stopped.
	Left    string
	Stopped bool
	// Partial is a copy the import could not remove.
	Partial bool
}

func (e *ImportError) Error() string {
	return fmt.Sprintf("importing %s's state into box %s failed: %v; %s", e.Tool.Title, e.Box, e.Err, e.Left)
}

// Hint is what to do next.
func (e *ImportError) Hint() string {
	switch {
	case e.Partial:
		return fmt.Sprintf("run the import again (it removes the partial copy), then boxes start %s", e.Box)
	case e.Stopped:
		return "boxes start " + e.Box
	}
	return ""
}

func (e *ImportError) Unwrap() error { return e.Err }

// Import carries im out with tree, checked by the caller: a running box
// is stopped; what the box holds at the tool's place, when something, is
// kept first in the snapshot im names (a copy of the whole /data); the
// tree is copied beside that place, owned by the agent, and a helper
// container then puts it in place, the old state out; a box that ran is
// started again, with its token. The box's state is replaced only once
// the box is stopped and the whole tree is in the box: a copy that fails
// (the tree changed on this machine, the engine went, Ctrl-C) is removed,
// the state left as it was, and a box that ran is started again unless
// the import was interrupted.
func (w *Workspace) Import(ctx context.Context, im *Importing, tree *toolstate.Tree, o ImportOptions) (ImportResult, error) {
	if o.Step == nil {
		o.Step = func(string) {}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	res := ImportResult{FormatVersion: ImportFormat, Box: im.Box, Host: im.Host, State: "stopped", Tool: im.Tool.Name, From: tree.Path, Path: im.Path,
		Files: tree.Files, Dirs: tree.Dirs, Links: tree.Links, Bytes: tree.Bytes, UID: im.UID, GID: im.GID, Replaced: im.Held, Snapshot: im.Snapshot,
		Credentials: []toolstate.Finding{}, title: im.Tool.Title}
	e, err := w.Engine(ctx, im.Host)
	if err != nil {
		return res, err
	}
	if im.Running {
		if err := w.ApplyOne(ctx, reconcile.StopPlan(im.Host, im.Box), o.Apply); err != nil {
			return res, fmt.Errorf("stopping %s for the import: %w; its /data was not touched", im.Box, err)
		}
	}
	if im.Snapshot != "" {
		_, err := snapshot.Take{Box: im.Box, Label: im.Snapshot, Fleet: w.Config.Fleet, Image: im.image, Config: w.Path, Host: im.Host, Now: o.Now,
			Step: func(msg string) { o.Step("snapshot " + im.Snapshot + ": " + msg) }, Warn: o.Warn}.Run(ctx, e)
		if err != nil {
			return res, w.importFailed(ctx, e, im, o, "", fmt.Errorf("keeping /data in snapshot %s: %w", im.Snapshot, err))
		}
	}
	staging, err := stagingName(im.Tool)
	if err != nil {
		return res, w.importFailed(ctx, e, im, o, "", err)
	}
	o.Step("copying " + text.Printable(tree.Shown) + " (" + text.Size(tree.Bytes) + ")")
	if err := copyTree(ctx, e, im, tree, staging, o.Content); err != nil {
		return res, w.importFailed(ctx, e, im, o, staging, err)
	}
	if o.Copied != nil {
		o.Copied()
	}
	o.Step("putting it in place")
	if _, err := e.RunHelper(ctx, placeHelper(im, staging, "place")); err != nil {
		return res, w.importFailed(ctx, e, im, o, staging, fmt.Errorf("putting the copy in place: %w", err))
	}
	if im.Running {
		if err := w.startAgain(ctx, im, o.Apply); err != nil {
			return res, hint.Wrap(fmt.Errorf("%s's state is imported into box %s, but %w", im.Tool.Title, im.Box, err), "boxes start %s", im.Box)
		}
		res.State = "running"
	}
	return res, nil
}

// importFailed undoes what a failed import did to the box once it was
// stopped, on a context a cancel does not end: it removes the copy the
// import made beside the tool's place (staging, when not ""), and starts a
// box that ran unless ctx was cancelled. It returns cause with what it
// left.
func (w *Workspace) importFailed(ctx context.Context, e engine.Helpers, im *Importing, o ImportOptions, staging string, cause error) error {
	ie := &ImportError{Box: im.Box, Tool: im.Tool, Err: cause}
	kept := ""
	if im.Snapshot != "" {
		kept = "; snapshot " + im.Snapshot + ", made for it, is kept"
	}
	if staging != "" {
		if _, err := e.RunHelper(context.WithoutCancel(ctx), placeHelper(im, staging, "undo")); err != nil {
			ie.Left = fmt.Sprintf("the box is stopped, its state as it was, and removing the partial copy (%s/%s) failed: %v%s", compose.AgentHome, staging, err, kept)
			ie.Stopped, ie.Partial = true, true
			return ie
		}
	}
	switch {
	case !im.Running:
		ie.Left = "the box's state is as it was" + kept
	case ctx.Err() != nil:
		ie.Left = "the box's state is as it was, and the box is stopped" + kept
		ie.Stopped = true
	default:
		if err := w.startAgain(ctx, im, o.Apply); err != nil {
			ie.Left = fmt.Sprintf("the box's state is as it was, and %v%s", err, kept)
			ie.Stopped = true
			return ie
		}
		ie.Left = "the box's state is as it was, and it runs again" + kept
	}
	return ie
}

// startAgain starts the box the import stopped, as boxes start does.
func (w *Workspace) startAgain(ctx context.Context, im *Importing, o ApplyOptions) error {
	return w.startStopped(ctx, im.Host, im.Box, im.r, o)
}

// stagingName is the name of a new copy beside tool's place in the home:
// random, so that nothing the box's agent made before can be in its way.
func stagingName(tool toolstate.Tool) (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return tool.Dir + stagingMark + hex.EncodeToString(b), nil
}

// stagingMark names, after the tool's directory, the copies an import
// makes beside it.
const stagingMark = ".boxes-import-"

// copyTree streams tree, as a tar of the directory staging owned by the
// box's agent, into the home of the box's stopped agent container.
func copyTree(ctx context.Context, e engine.Inside, im *Importing, tree *toolstate.Tree, staging string, content func(io.Reader) io.Reader) error {
	pr, pw := io.Pipe()
	written := make(chan error, 1)
	go func() {
		err := tree.WriteTar(pw, toolstate.TarOptions{Name: staging, UID: im.UID, GID: im.GID, Content: content})
		pw.CloseWithError(err)
		written <- err
	}()
	err := e.CopyTo(ctx, im.agent.ID, compose.AgentHome, pr)
	pr.CloseWithError(errCopyEnded)
	werr := <-written
	// The tree's own error says more than the engine's broken pipe.
	if werr != nil && !errors.Is(werr, errCopyEnded) {
		return werr
	}
	if err != nil {
		return fmt.Errorf("copying %s into the box: %w", text.Printable(tree.Shown), err)
	}
	return nil
}

var errCopyEnded = errors.New("the copy into the box ended")

// placeHelper is the helper container that puts the copy staging in the
// tool's place ("place"), or removes it ("undo"); see placeScript.
func placeHelper(im *Importing, staging, do string) engine.Helper {
	return engine.Helper{Box: im.Box, Image: im.image,
		Mounts: []engine.HelperMount{{Volume: compose.VolumeName(im.Box, compose.AgentVolume), Target: hb.Data}},
		Cmd:    []string{"sh", "-c", placeScript, "sh", compose.AgentHome, im.Tool.Dir, staging, do}}
}

// placeScript works in home "$1" on the tool's directory "$2" and the copy
// "$3" beside it: "$4" place moves the directory aside, the copy into its
// place, and removes what was aside and any copy an import cut short left;
// undo removes the copies. Either first finishes or rolls back a place cut
// short between its two renames, so that the tool's directory is never
// missing for long.
const placeScript = `set -eu
home=$1 dir=$2 new=$3 do=$4
old=$dir.boxes-replaced
if [ -L "$home" ] || [ ! -d "$home" ]; then echo "$home is not a directory" >&2; exit 3; fi
cd "$home"
if [ -e "$old" ] || [ -L "$old" ]; then
	if [ -e "$dir" ] || [ -L "$dir" ]; then rm -rf -- "$old"; else mv -- "$old" "$dir"; fi
fi
if [ "$do" = undo ]; then
	rm -rf -- "$dir"` + stagingMark + `*
	exit 0
fi
if [ -L "$new" ] || [ ! -d "$new" ]; then echo "the copy $home/$new is missing" >&2; exit 3; fi
if [ -e "$dir" ] || [ -L "$dir" ]; then mv -- "$dir" "$old"; fi
mv -- "$new" "$dir"
rm -rf -- "$old" "$dir"` + stagingMark + `*
`
