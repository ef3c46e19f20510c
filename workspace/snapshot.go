package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/snapshot"
)

// SnapshotRow is one snapshot as boxes snapshot, snapshots and snapshot rm
// print it.
type SnapshotRow struct {
	Box   string `json:"box"`
	Host  string `json:"host"` // "" is the local engine
	Label string `json:"label"`
	// Created is when it was made; zero when its label is unreadable.
	Created time.Time `json:"created"`
	// SizeBytes is the size of the /data it copies; -1 when unknown.
	SizeBytes int64  `json:"size_bytes"`
	Volume    string `json:"volume"`
	// Incomplete is a snapshot that a helper container is still writing,
	// or whose making was cut short; revert refuses it.
	Incomplete bool `json:"incomplete,omitempty"`
}

func rowOf(host string, s engine.Snapshot) SnapshotRow {
	return SnapshotRow{Box: s.Box, Host: host, Label: s.Label, Created: s.Created, SizeBytes: s.Size, Volume: s.Volume, Incomplete: s.Writing}
}

// When is the time it was made, as messages say it.
func (r SnapshotRow) When() string {
	if r.Created.IsZero() {
		return "an unknown date"
	}
	return r.Created.UTC().Format("2006-01-02 15:04:05 UTC")
}

// WriteText writes what boxes snapshot made.
func (r SnapshotRow) WriteText(w io.Writer) {
	fmt.Fprintf(w, "snapshot %s of %s made on %s: %s of /data, in volume %s\n", r.Label, r.Box, reconcile.HostLabel(r.Host), reconcile.HumanSize(r.SizeBytes), r.Volume)
}

// SnapshotRows are the snapshots boxes snapshots lists; their JSON is the
// array of rows.
type SnapshotRows []SnapshotRow

// WriteText writes rows as the table boxes snapshots prints.
func (rs SnapshotRows) WriteText(w io.Writer) {
	if len(rs) == 0 {
		fmt.Fprintln(w, "no snapshots")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BOX\tHOST\tLABEL\tCREATED\tSIZE")
	for _, r := range rs {
		label := r.Label
		if r.Incomplete {
			label += " (incomplete)"
		}
		created := "-"
		if !r.Created.IsZero() {
			created = r.Created.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Box, reconcile.HostName(r.Host), label, created, reconcile.HumanSize(r.SizeBytes))
	}
	_ = tw.Flush()
}

// SnapshotExistsError is a label box already has a snapshot under.
type SnapshotExistsError struct {
	Box, Label, Host string
	// Fleet holds the snapshot when it is another fleet's.
	Fleet string
}

func (e *SnapshotExistsError) Error() string {
	whose := ""
	if e.Fleet != "" {
		whose = " (fleet " + e.Fleet + "'s)"
	}
	return fmt.Sprintf("box %s already has a snapshot %s on %s%s; nothing was changed", e.Box, e.Label, reconcile.HostLabel(e.Host), whose)
}

// Hint is what to do instead.
func (e *SnapshotExistsError) Hint() string {
	if e.Fleet != "" {
		return "pick another label"
	}
	return fmt.Sprintf("pick another label, or boxes snapshot rm %s %s first", e.Box, e.Label)
}

// NoSnapshotError is a snapshot label box has none under.
type NoSnapshotError struct{ Box, Label string }

func (e *NoSnapshotError) Error() string {
	return fmt.Sprintf("box %s has no snapshot %s; nothing was changed", e.Box, e.Label)
}

// Hint is where to look.
func (e *NoSnapshotError) Hint() string { return "boxes snapshots " + e.Box + " lists its snapshots" }

// IncompleteSnapshotError is a snapshot revert refuses: its making was cut
// short, or runs still.
type IncompleteSnapshotError struct{ Box, Label string }

func (e *IncompleteSnapshotError) Error() string {
	return fmt.Sprintf("snapshot %s of box %s is incomplete (the boxes snapshot that made it was cut short, or still runs); nothing was changed", e.Label, e.Box)
}

// Hint is how to get rid of it.
func (e *IncompleteSnapshotError) Hint() string {
	return fmt.Sprintf("boxes snapshot rm %s %s deletes it", e.Box, e.Label)
}

// RevertError is a revert whose copy into the stopped box failed.
type RevertError struct {
	Box, Label string
	Err        error
}

func (e *RevertError) Error() string {
	return fmt.Sprintf("reverting box %s to snapshot %s failed: %v; the box is stopped, and its /data may hold part of the snapshot, marked quiesced so that the box does not run on it; the snapshot is untouched", e.Box, e.Label, e.Err)
}

// Hint is how to finish the revert.
func (e *RevertError) Hint() string {
	return fmt.Sprintf("boxes revert %s %s runs the revert again", e.Box, e.Label)
}

func (e *RevertError) Unwrap() error { return e.Err }

// SnapshotOptions are what a snapshot asks of its caller.
type SnapshotOptions struct {
	// Init bounds the wait for a new box's hb init before quiescing.
	Init hb.Wait
	// Step reports progress; Warn a problem that does not fail the snapshot.
	Step func(msg string)
	Warn func(format string, args ...any)
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Snapshot copies box name's /data into a new snapshot volume labelled
// label (the UTC time when ""), on the box's engine, under the box's lock
// (see snapshot.Take): a running box is quiesced as save quiesces it, and
// resumed whatever happens. A label that is not one, or that the box has
// already, is refused before anything changes.
func (w *Workspace) Snapshot(ctx context.Context, name, label string, o SnapshotOptions) (SnapshotRow, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	defaulted := label == ""
	if !defaulted {
		if err := snapshot.CheckLabel(label); err != nil {
			return SnapshotRow{}, err
		}
	}
	if err := w.LockBox(name, "boxes snapshot"); err != nil {
		return SnapshotRow{}, err
	}
	host, r, err := w.ObserveBox(ctx, name)
	if err != nil {
		return SnapshotRow{}, err
	}
	if err := w.hasData(name, host, r); err != nil {
		return SnapshotRow{}, err
	}
	if defaulted {
		label = w.freeLabel(host, name, "", o.Now)
	}
	if err := w.labelFree(host, name, label); err != nil {
		return SnapshotRow{}, err
	}
	image, err := w.helperImage(host, name, r)
	if err != nil {
		return SnapshotRow{}, err
	}
	e, err := w.Engine(ctx, host)
	if err != nil {
		return SnapshotRow{}, err
	}
	agent, _ := r.Container(compose.AgentService)
	s, err := snapshot.Take{Box: name, Label: label, Fleet: w.Config.Fleet, Agent: agent, Image: image, Config: w.Path, Host: host,
		Init: o.Init, Now: o.Now, Step: o.Step, Warn: o.Warn}.Run(ctx, e)
	if err != nil {
		return SnapshotRow{}, err
	}
	return rowOf(host, s), nil
}

// freeLabel is the default label of a snapshot of box name on host made
// now, after prefix, or, when the box has one of this second already (a
// snapshot a moment ago), of the next second, waited for, a few times at
// most.
func (w *Workspace) freeLabel(host, name, prefix string, now func() time.Time) string {
	var label string
	for range 3 {
		t := now()
		if label = prefix + snapshot.DefaultLabel(t); w.labelFree(host, name, label) == nil {
			break
		}
		time.Sleep(t.Truncate(time.Second).Add(time.Second).Sub(t))
	}
	return label
}

// hasData refuses a box that has no /data volume on host: not declared and
// with nothing there, declared and not created, or without the volume.
func (w *Workspace) hasData(name, host string, r engine.Resources) error {
	_, declared := w.Config.Box(name)
	switch {
	case r.Empty() && !declared:
		return w.Undeclared(name)
	case r.Empty():
		return &NoResourcesError{Box: name, Host: host}
	}
	want := compose.VolumeName(name, compose.AgentVolume)
	if hasVolume(r, want) {
		return nil
	}
	return fmt.Errorf("box %s has no /data volume (%s) on %s; nothing was changed", name, want, reconcile.HostLabel(host))
}

// labelFree refuses label when box name has a snapshot so labelled on
// host, of any fleet, or its volume's name is taken by one boxes does not own.
func (w *Workspace) labelFree(host, name, label string) error {
	o := w.Observed[host]
	if o == nil {
		return nil
	}
	for _, s := range o.SnapshotsOf(name) {
		if s.Label == label {
			e := &SnapshotExistsError{Box: name, Label: label, Host: host}
			if s.Fleet != w.Config.Fleet {
				e.Fleet = s.Fleet
			}
			return e
		}
	}
	if v := compose.SnapshotVolumeName(name, label); o.Unmanaged.Volumes[v] {
		return fmt.Errorf("volume %s on %s exists and is not boxes'; nothing was changed", v, reconcile.HostLabel(host))
	}
	return nil
}

// helperImage is the image the helper containers of box name run: the one
// its agent container runs, else boxes.lock's where host has it.
func (w *Workspace) helperImage(host, name string, r engine.Resources) (string, error) {
	if a, ok := r.Container(compose.AgentService); ok && a.Image != "" {
		return a.Image, nil
	}
	if id := w.Image(); id != "" && w.Observed[host] != nil && w.Observed[host].Images[id] {
		return id, nil
	}
	return "", fmt.Errorf("box %s has no agent container, and %s lacks boxes.lock's image to copy its /data with; nothing was changed", name, reconcile.HostLabel(host))
}

// ObserveSnapshots observes every host and lists this fleet's snapshots,
// those of box name alone when name is not "", by box, then by the time
// they were made. Another fleet's box is refused, as every one-box
// command refuses it.
func (w *Workspace) ObserveSnapshots(ctx context.Context, name string) (SnapshotRows, error) {
	if err := w.Observe(ctx); err != nil {
		return nil, err
	}
	rows := SnapshotRows{}
	var other *OtherFleetError
	for _, host := range w.Hosts() {
		for _, s := range w.Observed[host].Snapshots {
			if name != "" && s.Box != name {
				continue
			}
			if s.Fleet != w.Config.Fleet {
				if other == nil {
					other = &OtherFleetError{Box: s.Box, Host: host, Fleet: s.Fleet, Own: w.Config.Fleet}
				}
				continue
			}
			rows = append(rows, rowOf(host, s))
		}
	}
	if name != "" {
		host, declared := w.HostOf(name)
		var r engine.Resources
		if o := w.Observed[host]; o != nil {
			r = o.Of(name)
		}
		if err := w.Claim(name, host, r, false); err != nil {
			return nil, err
		}
		switch {
		case len(rows) > 0 || declared || !r.Empty():
		case other != nil:
			return nil, other
		default:
			return nil, w.Undeclared(name)
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Box != b.Box {
			return a.Box < b.Box
		}
		if !a.Created.Equal(b.Created) {
			return a.Created.Before(b.Created)
		}
		return a.Label < b.Label
	})
	return rows, nil
}

// LockedSnapshot takes box name's lock as what, observes every host and
// finds the box's snapshot label there: this fleet's, or refused.
func (w *Workspace) LockedSnapshot(ctx context.Context, name, label, what string) (SnapshotRow, error) {
	if err := snapshot.CheckLabel(label); err != nil {
		return SnapshotRow{}, err
	}
	if err := w.LockBox(name, what); err != nil {
		return SnapshotRow{}, err
	}
	if err := w.Observe(ctx); err != nil {
		return SnapshotRow{}, err
	}
	host, declared := w.HostOf(name)
	var r engine.Resources
	if o := w.Observed[host]; o != nil {
		r = o.Of(name)
	}
	if err := w.Claim(name, host, r, false); err != nil {
		return SnapshotRow{}, err
	}
	found := false
	for _, h := range w.Hosts() {
		for _, s := range w.Observed[h].SnapshotsOf(name) {
			found = true
			if s.Label != label {
				continue
			}
			if s.Fleet != w.Config.Fleet {
				return SnapshotRow{}, &OtherFleetError{Box: name, Host: h, Fleet: s.Fleet, Own: w.Config.Fleet}
			}
			return rowOf(h, s), nil
		}
	}
	if !found && !declared && r.Empty() {
		return SnapshotRow{}, w.Undeclared(name)
	}
	return SnapshotRow{}, &NoSnapshotError{Box: name, Label: label}
}

// RemoveSnapshot deletes snapshot s, found by LockedSnapshot, and the
// helper container a killed snapshot left writing it.
func (w *Workspace) RemoveSnapshot(ctx context.Context, s SnapshotRow) error {
	e, err := w.Engine(ctx, s.Host)
	if err != nil {
		return err
	}
	if err := e.RemoveVolume(ctx, s.Volume); err != nil {
		return fmt.Errorf("removing snapshot %s of %s: %w", s.Label, s.Box, err)
	}
	return nil
}

// Reversion is what boxes revert does to a box, found under its lock
// before anything changes.
type Reversion struct {
	Box, Host string
	Snapshot  SnapshotRow
	// Running is a box that runs now: it is started again after.
	Running bool
	image   string
	r       engine.Resources
}

// LockedReversion takes box name's lock, observes only its host, and finds
// what reverting it to its snapshot label there does. It refuses a label
// that is not one, a box that is another fleet's, undeclared or without
// /data, and a snapshot the box does not have there or that is incomplete.
func (w *Workspace) LockedReversion(ctx context.Context, name, label string) (*Reversion, error) {
	if err := snapshot.CheckLabel(label); err != nil {
		return nil, err
	}
	host, r, err := w.lockBoxWithData(ctx, name, "boxes revert")
	if err != nil {
		return nil, err
	}
	var s *engine.Snapshot
	for _, got := range w.Observed[host].SnapshotsOf(name) {
		if got.Label == label {
			s = &got
		}
	}
	switch {
	case s == nil:
		return nil, &NoSnapshotError{Box: name, Label: label}
	case s.Fleet != w.Config.Fleet:
		return nil, &OtherFleetError{Box: name, Host: host, Fleet: s.Fleet, Own: w.Config.Fleet}
	case s.Writing:
		return nil, &IncompleteSnapshotError{Box: name, Label: label}
	}
	image, err := w.helperImage(host, name, r)
	if err != nil {
		return nil, err
	}
	agent, _ := r.Container(compose.AgentService)
	return &Reversion{Box: name, Host: host, Snapshot: rowOf(host, *s), Running: agent.State == engine.Running, image: image, r: r}, nil
}

// WriteText says what the revert does, before it is confirmed.
func (rv *Reversion) WriteText(w io.Writer) {
	fmt.Fprintf(w, "box %s's /data is replaced by snapshot %s of %s (%s); what /data holds now is lost unless you snapshot it first (boxes snapshot %s)\n",
		rv.Box, rv.Snapshot.Label, rv.Snapshot.When(), reconcile.HumanSize(rv.Snapshot.SizeBytes), rv.Box)
	if rv.Running {
		fmt.Fprintf(w, "box %s is stopped for it, then started again; it keeps its token\n", rv.Box)
	} else {
		fmt.Fprintf(w, "box %s is not running and stays stopped\n", rv.Box)
	}
}

// Revert carries rv out: it stops the box, replaces its /data with the
// snapshot's content (see snapshot.Revert) and starts the box again if it
// ran; step, when not nil, is told of the copy. The box's volume is
// written only once the box is stopped; a copy that fails leaves the box
// stopped (a *RevertError), the snapshot untouched. An incomplete snapshot
// changes nothing.
func (w *Workspace) Revert(ctx context.Context, rv *Reversion, o ApplyOptions, step func(msg string)) error {
	e, err := w.Engine(ctx, rv.Host)
	if err != nil {
		return err
	}
	if err := w.ApplyOne(ctx, reconcile.StopPlan(rv.Host, rv.Box), o); err != nil {
		return fmt.Errorf("stopping %s for the revert: %w; its /data was not touched", rv.Box, err)
	}
	if step != nil {
		step("copying snapshot " + rv.Snapshot.Label + " into /data")
	}
	s := engine.Snapshot{Volume: rv.Snapshot.Volume, Box: rv.Box, Label: rv.Snapshot.Label}
	err = snapshot.Revert{Box: rv.Box, Snapshot: s, Image: rv.image}.Run(ctx, e)
	if errors.Is(err, snapshot.ErrIncomplete) {
		err = &IncompleteSnapshotError{Box: rv.Box, Label: rv.Snapshot.Label}
		if rv.Running {
			err = errors.Join(err, w.start(ctx, rv, o))
		}
		return err
	}
	if err != nil {
		return &RevertError{Box: rv.Box, Label: rv.Snapshot.Label, Err: err}
	}
	if rv.Running {
		return w.start(ctx, rv, o)
	}
	return nil
}

// start starts the reverted box again, as boxes start does.
func (w *Workspace) start(ctx context.Context, rv *Reversion, o ApplyOptions) error {
	return w.startStopped(ctx, rv.Host, rv.Box, rv.r, o)
}

// startStopped starts box name on host, which a revert or an import
// stopped (r is what it had then), as boxes start does.
func (w *Workspace) startStopped(ctx context.Context, host, name string, r engine.Resources, o ApplyOptions) error {
	p, err := w.StartPlan(host, name, r)
	if err == nil {
		err = w.ApplyOne(ctx, p, o)
	}
	if err != nil {
		return fmt.Errorf("starting %s again: %w", name, err)
	}
	return nil
}

// lockBoxWithData takes box name's lock for what, and observes it: a box
// boxes.yaml declares, with its data volume there.
func (w *Workspace) lockBoxWithData(ctx context.Context, name, what string) (string, engine.Resources, error) {
	if err := w.LockBox(name, what); err != nil {
		return "", engine.Resources{}, err
	}
	host, r, err := w.ObserveBox(ctx, name)
	if err != nil {
		return "", engine.Resources{}, err
	}
	if _, declared := w.Config.Box(name); !declared {
		return "", engine.Resources{}, w.Undeclared(name)
	}
	if err := w.hasData(name, host, r); err != nil {
		return "", engine.Resources{}, err
	}
	return host, r, nil
}
