package backup

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"filippo.io/age"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/reconcile"
)

// Seeder restores the archives of the boxes a plan creates from one: the
// reconcile.Seeder of apply and load.
type Seeder struct {
	// Dir is where relative restore: paths start (boxes.yaml's directory).
	Dir        string
	Identities []age.Identity
	Hosts      Hosts
	// Init, when its Timeout is set, has Finish wait for hb init (see
	// Finish).
	Init hb.Wait
	// Sizes bounds the data of each archive (by restore: path) to what
	// CheckRestores found in it.
	Sizes map[string]int64
	// Step shows progress of a box, in the applier's display.
	Step func(box, msg string)

	mu sync.Mutex
	// checks are the checks of restored data still to be made once the box
	// runs, by host and box: Seed leaves them, Finish makes them.
	checks map[[2]string]*pendingCheck
	// rooms are the room for /data on each host, measured once, beside
	// the create of the first box restored there, and shared by the
	// restores onto it.
	rooms map[string]*room
}

// room is one host's room for the data of restores: measured once, each
// restore then takes its archive's data from what is left.
type room struct {
	measured chan struct{} // closed once free and err are set
	free     int64
	err      error
	taken    int64 // by the restores it let in, under Seeder.mu
}

// pendingCheck is the check of a box's restored data, to be made.
type pendingCheck struct {
	file     string
	contents *archive.Contents
}

// Path is a restore: path, relative to Dir.
func (s *Seeder) Path(archive string) string {
	if filepath.IsAbs(archive) {
		return archive
	}
	return filepath.Join(s.Dir, archive)
}

func (s *Seeder) agent(ctx context.Context, host, box string) (engine.Inside, string, error) {
	e, err := s.Hosts.BoxEngine(ctx, host)
	if err != nil {
		return nil, "", err
	}
	id, err := e.ContainerID(ctx, box, compose.AgentService)
	return e, id, err
}

// Prepare starts measuring the room for restoring file into box on host,
// the box to be created from image: apply calls it before the create, so
// that the measure runs beside it. One measure serves every box restored
// onto a host.
func (s *Seeder) Prepare(ctx context.Context, host, box, file, image string) {
	if s.Sizes[file] <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rooms[host] != nil {
		return
	}
	if s.rooms == nil {
		s.rooms = map[string]*room{}
	}
	r := &room{measured: make(chan struct{})}
	s.rooms[host] = r
	go func() {
		defer close(r.measured)
		e, err := s.Hosts.BoxEngine(ctx, host)
		if err == nil {
			r.free, err = e.VolumeRoom(ctx, image, box)
		}
		r.err = err
	}()
}

// take takes need bytes for a restore onto host from the room Prepare
// measured there, or says why the restore does not fit.
func (s *Seeder) take(ctx context.Context, host string, need int64) error {
	s.mu.Lock()
	r := s.rooms[host]
	s.mu.Unlock()
	if r == nil {
		return fmt.Errorf("measuring the free space for /data: nothing measured it on %s before the create", reconcile.HostLabel(host))
	}
	select {
	case <-r.measured:
	case <-ctx.Done():
		return ctx.Err()
	}
	if r.err != nil {
		return fmt.Errorf("measuring the free space for /data: %w", r.err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	free := r.free - r.taken
	if free-need >= Reserve {
		r.taken += need
		return nil
	}
	others := ""
	if r.taken > 0 {
		others = fmt.Sprintf(" (besides the %s this command's other restores there take)", reconcile.HumanSize(r.taken))
	}
	return fmt.Errorf("%w for the restore on %s: the archive's data takes %s, %s are free%s, and %s must stay free; nothing was restored",
		archive.ErrNoRoom, reconcile.HostLabel(host), reconcile.HumanSize(need), reconcile.HumanSize(free), others, reconcile.HumanSize(Reserve))
}

// Seed restores the archive into the created, not yet started box, once it
// has checked that the engine has room for it (Prepare measured it).
func (s *Seeder) Seed(ctx context.Context, host, box, file string) error {
	if need := s.Sizes[file]; need > 0 {
		if err := s.take(ctx, host, need); err != nil {
			return err
		}
	}
	e, id, err := s.agent(ctx, host, box)
	if err != nil {
		return err
	}
	contents, err := restoreData(ctx, e, id, s.Path(file), s.Identities, s.Sizes[file])
	if err != nil {
		return err
	}
	if s.Step != nil {
		s.Step(box, "restored /data sent, its content checked against the archive")
	}
	// What the box wrote is checked once it runs: it starts quiesced (the
	// marker went in first), so nothing runs on the data before Finish has
	// the check's verdict. A box whose check fails stays quiesced, its
	// restore incomplete.
	s.mu.Lock()
	if s.checks == nil {
		s.checks = map[[2]string]*pendingCheck{}
	}
	s.checks[[2]string{host, box}] = &pendingCheck{file: file, contents: contents}
	s.mu.Unlock()
	return nil
}

// Finish checks what the started box holds of the data Seed restored
// into it, then resumes it: hb resume returns once hb init has run on the
// restored data, or says it has not. When Init has a Timeout, Finish then
// waits for hb init itself (a move); apply leaves it unset, for it waits
// for the whole box next (the agent's hb init and the gate), and a second
// probe of the agent would only add an exec to every restore.
func (s *Seeder) Finish(ctx context.Context, host, box string) error {
	s.mu.Lock()
	c := s.checks[[2]string{host, box}]
	delete(s.checks, [2]string{host, box})
	s.mu.Unlock()
	e, id, err := s.agent(ctx, host, box)
	if err != nil {
		return err
	}
	if c != nil {
		if err := checkRestored(ctx, e, id, c.contents); err != nil {
			return fmt.Errorf("restoring from %s: %w", c.file, err)
		}
		if s.Step != nil {
			s.Step(box, "restored /data checked against the archive")
		}
	}
	if err := hb.Resume(ctx, e, id); err != nil {
		return err
	}
	if s.Init.Timeout == 0 {
		return nil
	}
	w := s.Init
	if s.Step != nil {
		w.Waiting = func() { s.Step(box, "waiting for hb init to finish") }
	}
	return hb.WaitInit(ctx, e, box, id, w)
}
