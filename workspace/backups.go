package workspace

import (
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
)

// backupFile is one archive in backups/: its path relative to backups/'s
// parent, and when it was made.
type backupFile struct {
	path string
	made time.Time
}

// backupFiles are the archives in backups/ by box, newest first (by
// modification time).
type backupFiles map[string][]backupFile

// backupsIn lists the archives in dir named as save names them.
func backupsIn(dir string) backupFiles {
	out := backupFiles{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return out
	}
	modified := map[string]time.Time{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !archive.IsArchiveName(name) {
			continue
		}
		box := archive.BoxFromName(name)
		if box == "" {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		f := backupFile{path: filepath.Join("backups", name), made: madeAt(name, info.ModTime())}
		modified[f.path] = info.ModTime()
		out[box] = append(out[box], f)
	}
	for _, files := range out {
		sort.SliceStable(files, func(i, j int) bool { return modified[files[i].path].After(modified[files[j].path]) })
	}
	return out
}

// madeAt is when the archive name was made: the time in its name (UTC, as
// save and a move write it), else its modification time.
func madeAt(name string, modified time.Time) time.Time {
	stamp := archive.TrimExt(name)
	if len(stamp) > len("YYYYMMDD-HHMMSS") {
		if t, err := time.Parse("20060102-150405", stamp[len(stamp)-len("YYYYMMDD-HHMMSS"):]); err == nil {
			return t
		}
	}
	return modified
}

// newest is box's newest archive made no earlier than since, to the second
// (a name's time has no fraction); "" when there is none. A zero since
// takes any.
func (b backupFiles) newest(box string, since time.Time) string {
	since = since.Truncate(time.Second)
	for _, f := range b[box] {
		if !f.made.Before(since) {
			return f.path
		}
	}
	return ""
}

// boxMade is when box name in r was made: the creation of its data volume,
// which is the box (a recreate keeps it); zero when r has none or the
// engine did not say.
func boxMade(name string, r engine.Resources) time.Time {
	for _, v := range r.Volumes {
		if v.Name == compose.VolumeName(name, compose.AgentVolume) {
			return v.Created
		}
	}
	return time.Time{}
}

// Backups maps each box to its newest archive under backups/ that is a
// backup of the box as it is on the engines: made since its data volume
// was (boxMade). A box deleted and made again under its old name is a new
// box, and the old one's archives are not its backups. A box on no engine
// gets its newest archive; one on several (a move under way), its newest
// since the earliest of them.
func (w *Workspace) Backups() map[string]string {
	files := backupsIn(filepath.Join(w.Dir(), "backups"))
	out := map[string]string{}
	for box := range files {
		var since time.Time
		for _, o := range w.Observed {
			if o == nil {
				continue
			}
			if made := boxMade(box, o.Of(box)); !made.IsZero() && (since.IsZero() || made.Before(since)) {
				since = made
			}
		}
		if p := files.newest(box, since); p != "" {
			out[box] = p
		}
	}
	return out
}

// backupOf is box name's newest archive under backups/ made since r, its
// resources on one host, was (see Backups).
func (w *Workspace) backupOf(name string, r engine.Resources) string {
	return backupsIn(filepath.Join(w.Dir(), "backups")).newest(name, boxMade(name, r))
}
