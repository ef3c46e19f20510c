package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/statedir"
)

// FreeArchivePath is ArchivePath for now, or for the next second while
// that name is taken (a save a moment ago), so that two saves in one second
// do not collide; after a few seconds the taken name is returned and save
// refuses it.
func FreeArchivePath(dir, name string) string {
	var p string
	for i := 0; i < 3; i++ {
		now := time.Now()
		p = ArchivePath(dir, name, now)
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			return p
		}
		time.Sleep(now.Truncate(time.Second).Add(time.Second).Sub(now))
	}
	return p
}

// ArchivePath is where save writes box name's archive made at t by default:
// backups/NAME-YYYYMMDD-HHMMSS.tar.s2.age in dir, boxes.yaml's directory.
func ArchivePath(dir, name string, t time.Time) string {
	return filepath.Join(dir, "backups", name+"-"+t.UTC().Format("20060102-150405")+archive.Ext)
}

// SaveOptions are what a save asks of its caller.
type SaveOptions struct {
	// Passphrase is asked for when boxes.yaml names no archive recipients.
	Passphrase func() (string, error)
	// Writer, Init, Step and Warn are backup.Save's.
	Writer string
	Init   hb.Wait
	Step   func(msg string)
	Warn   func(format string, args ...any)
	// SHA256 has the result carry the archive's sha256 (for --json).
	SHA256 bool
}

// Save archives box name's /data to out (see backup.Save) under the box's
// lock, taken before the box is observed, and returns what it saved (see Saved).
func (w *Workspace) Save(ctx context.Context, name, out string, o SaveOptions) (BoxResult, error) {
	host, agent, err := w.BoxContainer(ctx, name, compose.AgentService, false, "boxes save")
	if err != nil {
		return BoxResult{}, err
	}
	e, err := w.Engine(ctx, host)
	if err != nil {
		return BoxResult{}, fmt.Errorf("%s: %w", name, err)
	}
	recipients, identity, err := backup.Keys(w.Config.Recipients, o.Passphrase)
	if err != nil {
		return BoxResult{}, err
	}
	s := backup.Save{
		Box: name, Agent: agent, Out: out, Recipients: recipients, Identity: identity,
		Writer: o.Writer, Init: o.Init, Step: o.Step, Warn: o.Warn,
		Config: w.Path, Host: host,
	}
	if l := w.Lock; l != nil && l.Image != nil && l.Image.ID == agent.Image {
		s.Tools = l.Image.Tools
	}
	saved, err := s.Run(ctx, e)
	if err != nil {
		return BoxResult{}, err
	}
	return w.Saved(name, out, saved, o.SHA256)
}

// ExistsError is a box that load would overwrite.
type ExistsError struct{ Box, Host string }

func (e *ExistsError) Error() string {
	return fmt.Sprintf("box %s already exists on %s; load creates boxes, it never overwrites one", e.Box, reconcile.HostLabel(e.Host))
}

// Hint is what to do instead.
func (e *ExistsError) Hint() string {
	return fmt.Sprintf("load it under another name, or boxes save then boxes rm %s first", e.Box)
}

// UnfinishedError is a load of another archive over a box whose restore
// from Archive was cut short.
type UnfinishedError struct {
	Box, Archive string
	// Shown is Archive as messages name it.
	Shown string
}

func (e *UnfinishedError) Error() string {
	return fmt.Sprintf("box %s has a restore from %s that was cut short; load finishes it only from the same archive", e.Box, e.Archive)
}

// Hint is how to finish the restore.
func (e *UnfinishedError) Hint() string {
	return fmt.Sprintf("boxes load %s %s, or boxes apply", e.Shown, e.Box)
}

// LoadPlan is the one-box plan that creates box name from archive file,
// made under the box's lock after what needs no passphrase is checked: the
// box is declared and exists on no host, and its host has boxes.lock's image
// or gets it as apply brings it (the plan's image transfer).
func (w *Workspace) LoadPlan(ctx context.Context, file, name string) (spec.Box, *reconcile.Plan, error) {
	box, ok := w.Config.Box(name)
	if !ok {
		return box, nil, w.Undeclared(name)
	}
	if err := w.LockBox(name, "boxes load"); err != nil {
		return box, nil, err
	}
	if err := w.Observe(ctx); err != nil {
		return box, nil, err
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return box, nil, err
	}
	// A load cut short is finished by loading the same archive again.
	unfinished, resume, err := statedir.Beside(w.Path).Restores().Get(name)
	if err != nil {
		return box, nil, err
	}
	for _, host := range w.Hosts() {
		if o := w.Observed[host]; o != nil && !o.Of(name).Empty() {
			if err := w.Claim(name, host, o.Of(name), false); err != nil {
				return box, nil, err
			}
			if resume && host == box.Host && unfinished.Host == host && unfinished.Archive != "" {
				if !backup.SameArchive(w.Dir(), unfinished.Archive, abs) {
					return box, nil, &UnfinishedError{Box: name, Archive: unfinished.Archive, Shown: w.opts.Shown(unfinished.Archive)}
				}
				continue
			}
			return box, nil, &ExistsError{Box: name, Host: host}
		}
	}
	image := w.Image()
	if image == "" {
		return box, nil, reconcile.ErrNoImage
	}
	p := reconcile.LoadPlan(box, image, abs)
	if !w.Observed[box.Host].Of(name).Empty() {
		p = reconcile.ReloadPlan(box, image, unfinished.Archive)
	}
	if err := reconcile.MissingRuntime(w.Config, w.Observed, p.Boxes); err != nil {
		return box, nil, err
	}
	if err := reconcile.OverHost(w.Config, w.Observed, p.Boxes); err != nil {
		return box, nil, err
	}
	// A host that lacks the image gets it as apply would bring it.
	if p.Images, err = reconcile.ImageTransfers(w.Observed, image, w.imageRef(), p.Boxes); err != nil {
		return box, nil, err
	}
	return box, p, nil
}
