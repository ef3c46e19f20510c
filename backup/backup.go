// Package backup saves a box's /data to an archive and restores one into a
// new box (load, and boxes created with restore:), over a narrow engine
// interface. Archives themselves are package archive's.
package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"filippo.io/age"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/hb"
	"github.com/hermes-box/boxes/reconcile"
)

// Engine is what saving and restoring need of a box's engine.
type Engine interface {
	hb.Runner
	// ContainerID is box's one container of service, running or not.
	ContainerID(ctx context.Context, box, service string) (string, error)
	CopyFrom(ctx context.Context, id, path string) (io.ReadCloser, error)
	CopyTo(ctx context.Context, id, dir string, content io.Reader) error
	ToolVersions(ctx context.Context, image string) (map[string]string, error)
}

// ErrExists is an archive name that is taken: save never overwrites one.
var ErrExists = errors.New("the archive exists; save never overwrites an archive")

// ErrNotArchive is a file that is not a boxes archive by its name.
var ErrNotArchive = errors.New("not a boxes archive (*" + archive.Ext + ", *" + archive.ExtGzip + " or the smolvm tool's *" + archive.ExtLegacy + ")")

// Save is one save of a box.
type Save struct {
	Box string
	// Agent is the box's agent container as observed.
	Agent reconcile.Container
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

// Run saves: quiesce a running box, stream /data into an encrypted archive,
// verify it by reading it back, publish it without overwriting anything,
// resume. The box is resumed whatever happens, a cancelled ctx included.
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
	if s.Agent.State == "running" {
		// hb init must not find the marker half-way through.
		if err := hb.WaitInit(ctx, e, s.Box, s.Agent.ID, s.Init); err != nil {
			return Saved{}, err
		}
		// Resume is registered first: a quiesce that fails half-way may
		// have written its marker already. It runs on a context that a
		// cancel (Ctrl-C) does not end.
		defer func() {
			if err := hb.Resume(context.WithoutCancel(ctx), e, s.Agent.ID); err != nil {
				s.Warn("resuming %s failed: %v; run boxes exec -u root %s -- hb resume", s.Box, err, s.Box)
			}
		}()
		if err := hb.Quiesce(ctx, e, s.Agent.ID); err != nil {
			return Saved{}, fmt.Errorf("quiescing %s: %w", s.Box, err)
		}
	}
	m := archive.Manifest{Format: archive.Format, Box: s.Box, Created: time.Now().UTC(), Image: s.Agent.Image, Writer: s.Writer, Tools: s.Tools}
	if m.Tools == nil {
		if tools, err := e.ToolVersions(ctx, s.Agent.Image); err == nil {
			m.Tools = tools
		}
	}
	if err := os.MkdirAll(filepath.Dir(s.Out), 0o700); err != nil {
		return Saved{}, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.Out), "."+s.Box+"-*.partial")
	if err != nil {
		return Saved{}, err
	}
	defer os.Remove(tmp.Name())
	s.Step("streaming /data")
	data, err := e.CopyFrom(ctx, s.Agent.ID, hb.Data)
	if err != nil {
		tmp.Close()
		return Saved{}, err
	}
	wrote, err := archive.Write(tmp, m, data, s.Recipients...)
	data.Close()
	if err == nil {
		err = tmp.Sync()
	}
	var info fs.FileInfo
	if err == nil {
		info, err = tmp.Stat()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Saved{}, fmt.Errorf("writing the archive: %w", err)
	}
	s.Step("verifying the archive")
	_, read, err := archive.VerifyFile(tmp.Name(), s.Identity)
	if err != nil {
		return Saved{}, fmt.Errorf("the archive does not read back, so it was not published: %w", err)
	}
	if read != wrote {
		return Saved{}, fmt.Errorf("the archive reads back %+v but %+v was written, so it was not published", read, wrote)
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

// Identities decrypt archive file: those in identityFile when it is set,
// else the passphrase. The file is checked first, so nobody is asked for a
// passphrase to read what is not there.
func Identities(file, identityFile string, passphrase func() (string, error)) ([]age.Identity, error) {
	if _, err := os.Stat(file); err != nil {
		return nil, err
	}
	if !archive.IsArchiveName(file) {
		return nil, fmt.Errorf("%s: %w", file, ErrNotArchive)
	}
	// The smolvm tool's archives open with a passphrase only.
	if identityFile != "" && !strings.HasSuffix(file, archive.ExtLegacy) {
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
// container id. hb's quiesce marker goes first: should the restore stop
// half-way, the box comes up quiesced (hb init waits) instead of running on
// part of the archive.
func Restore(ctx context.Context, e Engine, id, file string, identities []age.Identity) error {
	if err := e.CopyTo(ctx, id, "/", hb.MarkerTar("boxes restore")); err != nil {
		return err
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := archive.Data(f, identities...)
	if err != nil {
		return err
	}
	defer data.Close()
	return e.CopyTo(ctx, id, "/", data)
}

// Seeder restores the archives of the boxes a plan creates from one: the
// reconcile.Seeder of apply and load.
type Seeder struct {
	// Dir is where relative restore: paths start (boxes.yaml's directory).
	Dir        string
	Identities []age.Identity
	// Engine is host's engine.
	Engine func(ctx context.Context, host string) (Engine, error)
	Init   hb.Wait
	// Step shows progress of a box, in the applier's display.
	Step func(box, msg string)
}

// Path is a restore: path, relative to Dir.
func (s *Seeder) Path(archive string) string {
	if filepath.IsAbs(archive) {
		return archive
	}
	return filepath.Join(s.Dir, archive)
}

func (s *Seeder) agent(ctx context.Context, host, box string) (Engine, string, error) {
	e, err := s.Engine(ctx, host)
	if err != nil {
		return nil, "", err
	}
	id, err := e.ContainerID(ctx, box, compose.AgentService)
	return e, id, err
}

// Seed restores the archive into the created, not yet started box.
func (s *Seeder) Seed(ctx context.Context, host, box, archive string) error {
	e, id, err := s.agent(ctx, host, box)
	if err != nil {
		return err
	}
	return Restore(ctx, e, id, s.Path(archive), s.Identities)
}

// Finish resumes the started box and waits for hb init on the restored data.
func (s *Seeder) Finish(ctx context.Context, host, box string) error {
	e, id, err := s.agent(ctx, host, box)
	if err != nil {
		return err
	}
	if err := hb.Resume(ctx, e, id); err != nil {
		return err
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
// first archive. It returns nil identities when p restores nothing.
func CheckRestores(p *reconcile.Plan, dir string, identities func(path string) ([]age.Identity, error)) ([]age.Identity, []Checked, error) {
	s := Seeder{Dir: dir}
	var ids []age.Identity
	var checked []Checked
	for _, b := range p.Boxes {
		if b.Action != reconcile.Create || b.Restore == "" {
			continue
		}
		path := s.Path(b.Restore)
		if ids == nil {
			var err error
			if ids, err = identities(path); err != nil {
				return nil, nil, fmt.Errorf("box %s: restore: %w", b.Name, err)
			}
		}
		m, sum, err := archive.VerifyFile(path, ids...)
		if err != nil {
			return nil, nil, fmt.Errorf("box %s: restore: %s: %w; nothing was created or changed", b.Name, b.Restore, err)
		}
		checked = append(checked, Checked{Box: b.Name, Archive: b.Restore, Manifest: m, Summary: sum})
	}
	return ids, checked, nil
}
