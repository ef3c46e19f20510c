// Package snapshot makes engine-side copies of a box's /data volume (boxes
// snapshot) and puts one back (boxes revert), each with a short-lived
// helper container on the box's own engine running the box's own image
// (the helpers part of the engine contract, engine.Helpers).
// A snapshot never leaves its engine and is not encrypted: archives
// (package backup) are for leaving it.
//
// A snapshot volume holds the copy of /data under data/: the copy is made
// beside it and renamed into place once whole, so that a snapshot whose
// making was cut short, whatever killed it, has no data/ and is refused by
// revert.
package snapshot

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/spec"
)

// CheckLabel refuses a label a snapshot cannot have.
func CheckLabel(label string) error {
	if spec.ValidSnapshotLabel(label) {
		return nil
	}
	return hint.Wrap(fmt.Errorf("%q is not a snapshot label; nothing was changed", label),
		"a label is 1 to 63 characters of a-z, 0-9, '.', '_' and '-', starting with a letter or a digit (before-upgrade, 20260102-150405)")
}

// DefaultLabel is the label of a snapshot made at t when none is given:
// the UTC time, YYYYMMDD-HHMMSS.
func DefaultLabel(t time.Time) string { return t.UTC().Format("20060102-150405") }

// ErrIncomplete is a snapshot whose making was cut short: it holds no
// whole copy of /data.
var ErrIncomplete = errors.New("the snapshot is incomplete: the boxes snapshot that made it was cut short")

// dataDir is where a snapshot volume holds its copy of /data; partialDir
// where the copy is made.
const (
	dataDir    = "data"
	partialDir = ".partial"
)

// Take is one snapshot of a box.
type Take struct {
	Box, Label, Fleet string
	// Agent is the box's agent container as observed; a zero one when the
	// box has none. A running box is paused while its /data is copied.
	Agent engine.Container
	// Image is the image the helpers run: the box's own.
	Image string
	// Config is boxes.yaml's path, beside which the freeze is recorded
	// (see backup.Freeze), and Host the box's host.
	Config, Host string
	Init         hb.Wait
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Step reports progress; Warn a problem that does not fail the snapshot.
	Step func(msg string)
	Warn func(format string, args ...any)
}

// Run makes the snapshot: it quiesces a running box as save does, measures
// its /data, copies /data with a helper container (cp -a: owners, modes,
// times, links and extended attributes kept) into the snapshot volume that
// the helper's creation makes with its labels, and resumes the box whatever
// happens, a cancelled ctx included. A copy that fails or is cut short
// removes the new volume.
func (t Take) Run(ctx context.Context, e engine.Helpers) (engine.Snapshot, error) {
	if t.Step == nil {
		t.Step = func(string) {}
	}
	if t.Warn == nil {
		t.Warn = func(string, ...any) {}
	}
	if t.Now == nil {
		t.Now = time.Now
	}
	source := compose.VolumeName(t.Box, compose.AgentVolume)
	s := engine.Snapshot{Volume: compose.SnapshotVolumeName(t.Box, t.Label), Box: t.Box, Label: t.Label, Fleet: t.Fleet, Size: -1}
	quiesced := t.Agent.State == engine.Running
	if quiesced {
		var sizeErr error
		frozen, err := backup.Freeze{Box: t.Box, Agent: t.Agent.ID, Config: t.Config, Host: t.Host, Init: t.Init, Healthy: t.Agent.Health == engine.Healthy, Step: t.Step, Warn: t.Warn,
			Alongside: func(ctx context.Context) { s.Size, sizeErr = backup.DataSize(ctx, e, t.Agent.ID) }}.Hold(ctx, e)
		if err != nil {
			return engine.Snapshot{}, err
		}
		defer frozen.Thaw()
		if sizeErr != nil {
			s.Size = -1
			t.Warn("measuring %s's /data: %v; the snapshot records no size", t.Box, sizeErr)
		}
	} else {
		t.Step("measuring /data")
		out, err := e.RunHelper(ctx, engine.Helper{Box: t.Box, Image: t.Image, Mounts: []engine.HelperMount{{Volume: source, Target: "/from", ReadOnly: true}},
			Cmd: []string{"du", "-sbx", "/from"}})
		if err == nil {
			s.Size, err = parseDu(out)
		}
		if err != nil {
			if ctx.Err() != nil {
				return engine.Snapshot{}, ctx.Err()
			}
			t.Warn("measuring %s's /data: %v; the snapshot records no size", t.Box, err)
		}
	}
	s.Created = t.Now().UTC().Truncate(time.Second)
	t.Step("copying /data")
	_, err := e.RunHelper(ctx, engine.Helper{Box: t.Box, Image: t.Image, Snapshot: t.Label,
		Mounts: []engine.HelperMount{{Volume: source, Target: "/from", ReadOnly: true}, {Volume: s.Volume, Target: "/to", Labels: Labels(s)}},
		Cmd:    []string{"sh", "-c", copyScript, "sh", strconv.FormatBool(quiesced)}})
	if errors.Is(err, engine.ErrVolumeExists) {
		return engine.Snapshot{}, fmt.Errorf("creating volume %s: %w", s.Volume, err)
	}
	if err != nil {
		if rerr := e.RemoveVolume(context.WithoutCancel(ctx), s.Volume); rerr != nil {
			t.Warn("removing the incomplete snapshot volume %s: %v; boxes snapshot rm %s %s removes it", s.Volume, rerr, t.Box, t.Label)
		}
		if ctx.Err() != nil {
			return engine.Snapshot{}, ctx.Err()
		}
		return engine.Snapshot{}, fmt.Errorf("copying %s's /data: %w", t.Box, err)
	}
	return s, nil
}

// copyScript copies /from, the box's /data, to /to/data by way of
// /to/.partial; "$1" is true when the box was quiesced for it, whose
// quiesce marker is then no part of its data (and hb's directory keeps
// the time it has in /data).
var copyScript = scriptNames + `set -eu
cp -a /from/. "/to/$partial"
if [ "$1" = true ] && [ -e "/to/$partial/$hbdir/$marker" ]; then
	rm "/to/$partial/$hbdir/$marker"
	touch -r "/from/$hbdir" "/to/$partial/$hbdir"
fi
mv "/to/$partial" "/to/$data"
`

// scriptNames set the names the scripts use: hb's directory in /data and
// its quiesce marker there, and where a snapshot volume holds its copy and
// makes it.
var scriptNames = fmt.Sprintf("hbdir=%s marker=%s data=%s partial=%s\n",
	path.Dir(strings.TrimPrefix(hb.QuiescedMarker, "data/")), path.Base(hb.QuiescedMarker), dataDir, partialDir)

// Labels are the labels of snapshot volume s.
func Labels(s engine.Snapshot) map[string]string {
	l := compose.Labels(s.Box)
	for k, v := range compose.FleetLabels(s.Fleet) {
		l[k] = v
	}
	l[compose.SnapshotLabel] = s.Label
	l[compose.SnapshotCreatedLabel] = s.Created.UTC().Format(time.RFC3339)
	if s.Size >= 0 {
		l[compose.SnapshotSizeLabel] = strconv.FormatInt(s.Size, 10)
	}
	return l
}

// parseDu reads the byte count du -sb printed.
func parseDu(out []byte) (int64, error) {
	f := strings.Fields(string(out))
	if len(f) == 0 {
		return -1, errors.New("du printed nothing")
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return -1, fmt.Errorf("du: %q: %w", f[0], err)
	}
	return n, nil
}

// Revert is one revert of a box to one of its snapshots.
type Revert struct {
	Box      string
	Snapshot engine.Snapshot
	// Image is the image the helper runs: the box's own.
	Image string
}

// Run replaces the content of the box's /data volume with the snapshot's,
// with a helper container; the box must be stopped. The quiesce marker is
// written first and removed last, so that a box started on a revert cut
// short waits in hb init instead of running on part of its data. The
// snapshot is only read.
func (r Revert) Run(ctx context.Context, e engine.Helpers) error {
	return replace(ctx, e, r.Box, r.Image, r.Snapshot.Volume, true, false, "boxes revert")
}

// Fork fills a new box's /data, on its own engine, from a snapshot of
// another box (from: alpha@LABEL) or from that box's /data as it is
// (from: alpha). The new box is created and not started.
type Fork struct {
	Box string
	// Source is the volume copied: a snapshot volume when Snapshot (its
	// data/ is copied), else the source box's /data volume.
	Source   string
	Snapshot bool
	// Quiesced is a source box that was quiesced for the copy: its quiesce
	// marker is no part of its data.
	Quiesced bool
	// Image is the image the helper runs: the new box's own.
	Image string
}

// Run copies Source into the box's /data volume as a revert does: the
// quiesce marker first, removed last, so that a fork cut short never runs
// as if it were whole. A snapshot whose making was cut short is
// ErrIncomplete, and nothing is written.
func (f Fork) Run(ctx context.Context, e engine.Helpers) error {
	return replace(ctx, e, f.Box, f.Image, f.Source, f.Snapshot, f.Quiesced, "boxes fork")
}

// replace replaces box's /data with volume source's content (its data/
// when it is a snapshot), by one helper container; see replaceScript. why
// is what the quiesce marker says meanwhile.
func replace(ctx context.Context, e engine.Helpers, box, image, source string, isSnapshot, quiesced bool, why string) error {
	from := "/from"
	if isSnapshot {
		from += "/" + dataDir
	}
	_, err := e.RunHelper(ctx, engine.Helper{Box: box, Image: image,
		Mounts: []engine.HelperMount{{Volume: source, Target: "/from", ReadOnly: true}, {Volume: compose.VolumeName(box, compose.AgentVolume), Target: "/to"}},
		Cmd:    []string{"sh", "-c", replaceScript, "sh", from, strconv.FormatBool(quiesced), why}})
	var exit *engine.ExitError
	if errors.As(err, &exit) && exit.Code == incompleteExit {
		return ErrIncomplete
	}
	return err
}

// incompleteExit is replaceScript's exit code for a snapshot without data/.
const incompleteExit = 3

// replaceScript empties /to, the box's /data, but for hb's quiesce marker,
// which it writes first, copies "$1" in (a snapshot's data/, or a box's
// /data), then removes the marker unless the copy has one of its own that
// is its data ("$2" is true when the source box was quiesced for the copy,
// whose marker is not), giving hb's directory back the source's time. The
// marker says "$3" meanwhile.
var replaceScript = scriptNames + `set -eu
src=$1 quiesced=$2 why=$3
[ -d "$src" ] || exit ` + strconv.Itoa(incompleteExit) + `
mkdir -p "/to/$hbdir"
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $why" > "/to/$hbdir/$marker"
find /to -mindepth 1 -maxdepth 1 ! -name "$hbdir" -exec rm -rf {} +
find "/to/$hbdir" -mindepth 1 -maxdepth 1 ! -name "$marker" -exec rm -rf {} +
cp -a "$src/." /to/
if [ "$quiesced" != true ] && [ -e "$src/$hbdir/$marker" ]; then :
elif [ -d "$src/$hbdir" ]; then
	rm -f "/to/$hbdir/$marker"
	touch -r "$src/$hbdir" "/to/$hbdir"
else rm -rf "/to/$hbdir"
fi
`
