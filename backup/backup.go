// Package backup saves a box's /data to an archive and restores one into a
// new box (load, and boxes created with restore:), over a narrow engine
// interface. Archives themselves are package archive's.
package backup

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"filippo.io/age"
	"github.com/klauspost/readahead"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/statedir"
)

// Engine is the part of the engine contract saves, restores and moves use.
type Engine = engine.Inside

// Reserve is the free space a restore leaves on the engine's disk: it is
// refused before it starts when the archive's data would not fit above it.
const Reserve = 256 << 20

// ErrExists is an archive name that is taken: save never overwrites one.
var ErrExists = hint.New("the archive exists; save never overwrites an archive", "name another file with -o")

// ErrNotArchive is a file that is not a boxes archive by its name.
var ErrNotArchive = hint.New("not a boxes archive (*"+archive.Ext+", *"+archive.ExtZstd+", *"+archive.ExtGzip+" or the smolvm tool's *"+archive.ExtLegacy+")",
	"boxes save writes NAME-YYYYMMDD-HHMMSS"+archive.Ext+"; rename an archive only back to the name it was given")

// ErrNeedsIdentity is an archive saved to age keys opened with no identity.
var ErrNeedsIdentity = hint.New("it is saved to age keys, not to a passphrase, and "+EnvIdentity+" is not set",
	"set "+EnvIdentity+" to the age identity file of a key it was saved to (archive.recipients in boxes.yaml)")

// ErrNoArchive is an archive path where there is no file.
var ErrNoArchive = hint.New("no such archive", "boxes save writes archives under backups/ beside boxes.yaml; boxes ls shows each box's last one")

// Save is one save of a box.
type Save struct {
	Box string
	// Agent is the box's agent container as observed.
	Agent engine.Container
	// Out is the archive to write; it must not exist.
	Out string
	// Recipients encrypt the archive; Identity reads it back to verify it.
	Recipients []age.Recipient
	Identity   age.Identity
	// Tools are the tool versions of the agent's image when known (the
	// lock's); else they are read from the image.
	Tools map[string]string
	// Writer names the program in the manifest ("boxes v1.2.3").
	Writer string
	// Init bounds the wait for a new box's hb init before quiescing.
	Init hb.Wait
	// Config is boxes.yaml's path, beside which the save keeps the record
	// of the box it froze (statedir.HoldFreeze), and Host the box's host.
	// With no Config nothing is recorded.
	Config, Host string
	// Step reports progress; Warn a problem that does not fail the save.
	Step func(msg string)
	Warn func(format string, args ...any)
}

// Saved is what a save wrote.
type Saved struct {
	Summary archive.Summary
	// Size is the archive file's size in bytes.
	Size int64
}

// Run saves: quiesce and pause a running box, stream /data into an
// encrypted archive, thaw the box, verify the archive by reading it back,
// publish it without overwriting anything. The box is thawed whatever
// happens, a cancelled ctx included; should boxes itself be killed, the
// freeze record it leaves makes the next command that touches the box, or
// apply, thaw it (see Thaw). The archive is written to a hidden .partial
// file beside Out, locked while the save runs, so that the next save or ls
// removes it if the save dies (RemoveLeftovers).
func (s Save) Run(ctx context.Context, e Engine) (Saved, error) {
	if s.Step == nil {
		s.Step = func(string) {}
	}
	if s.Warn == nil {
		s.Warn = func(string, ...any) {}
	}
	if _, err := os.Lstat(s.Out); err == nil {
		return Saved{}, fmt.Errorf("%s: %w", s.Out, ErrExists)
	}
	dir := filepath.Dir(s.Out)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Saved{}, err
	}
	if _, err := RemoveLeftovers(dir); err != nil {
		s.Warn("removing what saves that died left in %s: %v", dir, err)
	}
	m := archive.Manifest{Box: s.Box, Created: time.Now().UTC(), Image: s.Agent.Image, Writer: s.Writer, Tools: s.Tools}
	if m.Tools == nil {
		if tools, err := e.ToolVersions(ctx, s.Agent.Image); err == nil {
			m.Tools = tools
		}
	}
	tmp, err := createPartial(dir, s.Box)
	if err != nil {
		return Saved{}, err
	}
	defer func() {
		os.Remove(tmp.Name())
		tmp.Close() // after the removal: the lock says the save runs
	}()
	wrote, err := s.capture(ctx, e, m, tmp)
	if errors.Is(err, archive.ErrReadBack) {
		return Saved{}, fmt.Errorf("the archive was not published: %w", err)
	}
	var info fs.FileInfo
	if err == nil {
		info, err = tmp.Stat()
	}
	if err != nil {
		return Saved{}, fmt.Errorf("writing the archive: %w", err)
	}
	// A hard link publishes the file whole, and fails if the name is taken.
	if err := os.Link(tmp.Name(), s.Out); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return Saved{}, fmt.Errorf("%s appeared while saving: %w", s.Out, ErrExists)
		}
		return Saved{}, err
	}
	return Saved{Summary: wrote, Size: info.Size()}, nil
}

// capture writes the archive of the box's /data to f, the box frozen (when
// it runs) from just before its data is measured to the end of the stream,
// and reads the file back as it is written (archive.FileWriter): once it
// returns without error, f holds an archive that reads back with
// s.Identity. The box is thawed as soon as its data has been read, while
// the archive is finished, synced and its read-back completed; capture
// returns once both are done.
func (s Save) capture(ctx context.Context, e Engine, m archive.Manifest, f *os.File) (archive.Summary, error) {
	id := s.Agent.ID
	// The archive's encryption starts at once, beside the steps before the
	// stream: a passphrase's key derivation takes most of a second, which
	// the box need not spend paused. The pause waits for it.
	var w *archive.FileWriter
	var werr error
	started := make(chan struct{})
	go func() {
		defer close(started)
		w, werr = archive.NewFileWriter(f, s.Identity, s.Recipients...)
	}()
	defer func() {
		<-started
		if w != nil {
			w.Abort() // nothing once Close has run
		}
	}()
	// startThaw starts thawing the box, once; thawed waits for the thaw.
	startThaw, thawed := func() {}, func() {}
	defer func() { thawed() }()
	if s.Agent.State == engine.Running {
		// The data is measured while the box quiesces: the bound's margin
		// covers what its processes write before they stop, and what
		// root's, which go on, add before the pause.
		var size int64
		var sizeErr error
		frozen, err := Freeze{Box: s.Box, Agent: id, Config: s.Config, Host: s.Host, Init: s.Init, Healthy: s.Agent.Health == engine.Healthy, Step: s.Step, Warn: s.Warn,
			Alongside: func(ctx context.Context) {
				size, sizeErr = DataSize(ctx, e, id)
				<-started
			}}.Hold(ctx, e)
		if err != nil {
			return archive.Summary{}, err
		}
		startThaw, thawed = frozen.StartThaw, frozen.Thaw
		if sizeErr == nil {
			m.Size = size + size/8 + 64<<20
		} else {
			s.Warn("measuring %s's /data: %v; the archive records no size bound", s.Box, sizeErr)
		}
	}
	<-started
	if werr != nil {
		return archive.Summary{}, werr
	}
	s.Step("streaming /data")
	data, err := e.CopyFrom(ctx, id, hb.Data)
	if err != nil {
		return archive.Summary{}, err
	}
	// The engine's stream is drained up to 8 MiB ahead of the archive's
	// writing, so that neither waits for the other at every piece: on two
	// cores the engine's tar and the compression, encryption and hashing
	// of the stream take turns otherwise. With it, and the hashing handed
	// whole buffers of small files, a save of 20000 files of 10 KiB took
	// 1.4 s instead of 1.6 s here. The stream is closed before the
	// read-ahead, whose Close waits for a read of it to end.
	ahead, err := readahead.NewReaderSize(data, 16, 512<<10)
	if err != nil {
		data.Close()
		return archive.Summary{}, err
	}
	defer func() { data.Close(); ahead.Close() }()
	// Read only: the read-ahead's WriteTo reports the stream's end as an
	// error.
	sum, _, err := w.Copy(m, struct{ io.Reader }{ahead})
	if err != nil {
		return archive.Summary{}, err
	}
	// The data is read: the box is thawed while the archive is finished.
	data.Close()
	startThaw()
	s.Step("verifying the archive")
	if err := w.Close(); err != nil {
		return archive.Summary{}, err
	}
	return sum, nil
}

// thaw unpauses and resumes the agent container id.
func thaw(ctx context.Context, e Engine, id string) error {
	var uerr error
	if e.Capabilities().Freeze {
		uerr = e.Unpause(ctx, id)
	}
	rerr := hb.Resume(ctx, e, id)
	return errors.Join(uerr, rerr)
}

// DataSize is the apparent size in bytes of /data in running container id,
// each file counted once: at least the total of its regular files. It gives
// up after DataSizeTimeout: a save without the measure still runs, its
// archive records no size bound.
func DataSize(ctx context.Context, e Engine, id string) (int64, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, DataSizeTimeout, fmt.Errorf("du took over %s", DataSizeTimeout))
	defer cancel()
	var out, errb strings.Builder
	code, err := e.Run(ctx, id, "root", []string{"du", "-sbx", hb.Data}, &out, &errb)
	if err != nil {
		return 0, err
	}
	f := strings.Fields(out.String())
	if len(f) == 0 {
		return 0, fmt.Errorf("du exited %d: %s", code, strings.TrimSpace(errb.String()))
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("du: %q: %w", f[0], err)
	}
	return n, nil
}

// DataSizeTimeout bounds DataSize: du walks a million files in seconds,
// and an engine that missed the end of its exec (seen with 20.10 under
// load) would otherwise hold the save for ever.
var DataSizeTimeout = 2 * time.Minute

// Thaw undoes what a save that died left on box: its agent container
// paused, quiesced (its processes stopped, hb's marker written). It does
// nothing unless configPath's freeze record of box is there and no save
// holds it; the record is removed once the box is thawed.
func Thaw(ctx context.Context, configPath string, e Engine, box string) error {
	held, rec, err := statedir.TakeStaleFreeze(configPath, box)
	if err != nil || held == nil {
		return err
	}
	id := rec.Container
	// The box's agent now, should the frozen one have been replaced.
	if current, err := e.ContainerID(ctx, box, compose.AgentService); err == nil && current != "" {
		id = current
	}
	if err := thaw(ctx, e, id); err != nil {
		held.Keep()
		return err
	}
	return held.Release()
}

// Hosts reaches the engine of each host of a workspace, for saves,
// restores and moves.
type Hosts interface {
	// BoxEngine is host's engine.
	BoxEngine(ctx context.Context, host string) (Engine, error)
}

// Thawer thaws boxes for the applier (apply.Thawer).
type Thawer struct {
	// Config is boxes.yaml's path.
	Config string
	Hosts  Hosts
}

// Thaw thaws box on host (see Thaw).
func (t Thawer) Thaw(ctx context.Context, host, box string) error {
	e, err := t.Hosts.BoxEngine(ctx, host)
	if err != nil {
		return err
	}
	return Thaw(ctx, t.Config, e, box)
}

// partialSuffix ends the name of an archive being written.
const partialSuffix = ".partial"

// createPartial makes the hidden file a save of box writes its archive to,
// locked for as long as it is open.
func createPartial(dir, box string) (*os.File, error) {
	for range 10 {
		f, err := os.CreateTemp(dir, "."+box+"-*"+partialSuffix)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
			// A RemoveLeftovers that came between may have removed it.
			if fi, err := os.Stat(f.Name()); err == nil && sameFile(f, fi) {
				return f, nil
			}
		}
		f.Close()
	}
	return nil, fmt.Errorf("could not make a file to save to in %s", dir)
}

func sameFile(f *os.File, fi fs.FileInfo) bool {
	own, err := f.Stat()
	return err == nil && os.SameFile(own, fi)
}

// RemoveLeftovers removes the hidden .partial files of saves that are no
// longer running from dir (a save holds a lock on its own while it runs),
// and returns their names.
func RemoveLeftovers(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, ent := range entries {
		name := ent.Name()
		if !strings.HasPrefix(name, ".") || !strings.HasSuffix(name, partialSuffix) || !ent.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, name)
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			if fi, err := os.Lstat(path); err == nil && sameFile(f, fi) {
				if err := os.Remove(path); err != nil {
					errs = append(errs, err)
				} else {
					removed = append(removed, name)
				}
			}
		}
		f.Close()
	}
	return removed, errors.Join(errs...)
}

// Keys are the recipients save encrypts to and the identity it verifies
// with: boxes.yaml's archive recipients plus a one-time key that save
// forgets once it has read the archive back, or else a passphrase.
func Keys(recipients []string, passphrase func() (string, error)) ([]age.Recipient, age.Identity, error) {
	if len(recipients) == 0 {
		pass, err := passphrase()
		if err != nil {
			return nil, nil, err
		}
		r, err := archive.PassphraseRecipient(pass)
		if err != nil {
			return nil, nil, err
		}
		id, err := archive.PassphraseIdentity(pass)
		return []age.Recipient{r}, id, err
	}
	var out []age.Recipient
	for _, s := range recipients {
		r, err := age.ParseX25519Recipient(s)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, r)
	}
	once, err := age.GenerateX25519Identity()
	if err != nil {
		return nil, nil, err
	}
	return append(out, once.Recipient()), once, nil
}

// Identities decrypt archive file: for an archive saved to age keys, those
// in identityFile, which must be set; for one saved to a passphrase, the
// passphrase, whether identityFile is set or not; for one whose header does
// not tell, identityFile's when it is set, else the passphrase. The file is
// checked first, so nobody is asked for a passphrase to read what is not
// there, or for one that cannot open it.
func Identities(file, identityFile string, passphrase func() (string, error)) ([]age.Identity, error) {
	if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", file, ErrNoArchive)
	} else if err != nil {
		return nil, err
	}
	if !archive.IsArchiveName(file) {
		return nil, fmt.Errorf("%s: %w", file, ErrNotArchive)
	}
	secret := archive.SecretOf(file)
	if secret == archive.SecretKeys && identityFile == "" {
		return nil, ErrNeedsIdentity
	}
	// The smolvm tool's archives open with a passphrase only.
	if identityFile != "" && !strings.HasSuffix(file, archive.ExtLegacy) && secret != archive.SecretPassphrase {
		f, err := os.Open(identityFile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		ids, err := age.ParseIdentities(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", identityFile, err)
		}
		return ids, nil
	}
	pass, err := passphrase()
	if err != nil {
		return nil, err
	}
	id, err := archive.PassphraseIdentity(pass)
	if err != nil {
		return nil, err
	}
	return []age.Identity{id}, nil
}

// Restore restores archive file into the created, not yet started agent
// container id. The archive's content is checked as it streams: every
// regular file is hashed as it is sent and the stream fails, the restore
// with it, should any differ from the hashes recorded at save. What the box
// wrote is checked once it runs (the Seeder's Finish; a move's Check).
// hb's quiesce marker goes first: should the restore stop half-way, the
// box comes up quiesced (hb init waits) instead of running on part of the
// archive. maxBytes, when not zero, bounds the data restored (the size a
// check of the whole archive found).
func Restore(ctx context.Context, e Engine, id, file string, identities []age.Identity, maxBytes int64) error {
	_, err := restoreData(ctx, e, id, file, identities, maxBytes)
	return err
}

// restoreData is Restore that returns what it streamed, for checkRestored.
func restoreData(ctx context.Context, e Engine, id, file string, identities []age.Identity, maxBytes int64) (*archive.Contents, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// A box's owners, whatever the archive says: the agent's home is the
	// agent's, the rest root's.
	owner := &archive.Owner{Home: hb.AgentHome, UID: hb.AgentUID, GID: hb.AgentUID}
	// hb's quiesce marker is the stream's first entry: the engine writes
	// the entries in order, so a restore cut short leaves it.
	marker := func(tw *tar.Writer) error { return hb.WriteMarker(tw, "boxes restore") }
	data, err := archive.OpenData(f, archive.Options{Identities: identities, MaxBytes: maxBytes, Owner: owner, Before: marker})
	if err != nil {
		return nil, err
	}
	defer data.Close()
	if err := e.CopyTo(ctx, id, "/", data); err != nil {
		// The archive's own error says more than the engine's broken pipe.
		data.Close()
		if _, aerr := data.Contents(); aerr != nil && !errors.Is(aerr, io.ErrClosedPipe) {
			return nil, aerr
		}
		return nil, err
	}
	return data.Contents()
}

// checkRestored checks that running container id's /data holds every entry
// contents streamed into it, of its kind and size: a copy cut short, or an
// entry the engine dropped, fails it. It lists /data inside the box, one
// exec, instead of reading the data back through the engine: the content
// was checked against the archive's hashes as it streamed.
func checkRestored(ctx context.Context, e Engine, id string, contents *archive.Contents) error {
	pr, pw := io.Pipe()
	checked := make(chan error, 1)
	go func() {
		err := contents.CheckListing(pr)
		_, _ = io.Copy(io.Discard, pr) // the rest, should the check stop early
		checked <- err
	}()
	var errb strings.Builder
	code, err := e.Run(ctx, id, "root", archive.ListCommand(hb.Data), pw, &errb)
	pw.Close()
	lerr := <-checked
	switch {
	case err != nil:
		return fmt.Errorf("listing the restored data: %w", err)
	case code != 0:
		return fmt.Errorf("listing the restored data: find exited %d: %s", code, strings.TrimSpace(errb.String()))
	case lerr != nil:
		return fmt.Errorf("checking the restored data against the archive: %w", lerr)
	}
	return nil
}

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

func (s *Seeder) agent(ctx context.Context, host, box string) (Engine, string, error) {
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

// Checked is one restore archive checked whole before anything changes.
type Checked struct {
	Box      string
	Archive  string
	Manifest archive.Manifest
	Summary  archive.Summary
}

// CheckRestores decrypts and checks every restore archive of the creates in
// p whole, before apply changes anything. identities is asked once, for the
// first archive. It returns nil identities when p restores nothing. Errors
// name an archive as shown does.
func CheckRestores(ctx context.Context, p *reconcile.Plan, dir string, identities func(path string) ([]age.Identity, error), shown func(string) string) ([]age.Identity, []Checked, error) {
	s := Seeder{Dir: dir}
	var ids []age.Identity
	var checked []Checked
	for _, b := range p.Boxes {
		if (b.Action != reconcile.Create && b.Action != reconcile.Recreate) || b.Restore == "" {
			continue
		}
		path := s.Path(b.Restore)
		if ids == nil {
			var err error
			if ids, err = identities(path); err != nil {
				return nil, nil, fmt.Errorf("box %s: restore: %w", b.Name, err)
			}
		}
		// Every rule, before anything is created; the content hashes are
		// checked as the restore streams, against those recorded at save.
		// Ctrl-C stops the check at its next read.
		m, sum, err := archive.VerifyFileContext(ctx, path, archive.Options{Identities: ids, RecordedHashes: true})
		if err != nil {
			return nil, nil, fmt.Errorf("box %s: restore: %s: %w; nothing was created or changed", b.Name, shown(b.Restore), err)
		}
		checked = append(checked, Checked{Box: b.Name, Archive: b.Restore, Manifest: m, Summary: sum})
	}
	return ids, checked, nil
}

// Bounds are the bounds on the data of each checked archive, by restore:
// path, for Seeder.Sizes: what the check found, and a little more for the
// legacy markers a reader drops after counting them.
func Bounds(checked []Checked) map[string]int64 {
	out := map[string]int64{}
	for _, c := range checked {
		out[c.Archive] = c.Summary.Bytes + archive.MarkerSlack
	}
	return out
}

// SameArchive reports whether a restore: path (relative to dir, boxes.yaml's
// directory) and a path name one file.
func SameArchive(dir, recorded, path string) bool {
	if !filepath.IsAbs(recorded) {
		recorded = filepath.Join(dir, recorded)
	}
	a, err := os.Stat(recorded)
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}
