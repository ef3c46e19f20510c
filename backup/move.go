package backup

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"filippo.io/age"

	"github.com/hermes-box/boxes/apply"
	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/hb"
)

// Mover is the reconcile.Mover of apply: it saves, restores and checks a
// moved box through the engines' copy APIs. A move's archive is encrypted
// to an age identity made for the move (kept beside the tokens, mode 0600)
// and to boxes.yaml's archive recipients, so that a move cut short resumes
// without asking anyone for a passphrase, and the archive stays readable as
// a backup afterwards.
type Mover struct {
	Hosts MoveHosts
	// Recipients are boxes.yaml's archive recipients (age public keys).
	Recipients []string
	// Tools are the locked image's tool versions, for the manifest; nil reads them from the image.
	Tools  map[string]string
	Writer string
	Init   hb.Wait
	// Step shows progress of a box, in the applier's display.
	Step func(box, msg string)
}

// MoveHosts is what a move needs of the hosts it moves a box between.
type MoveHosts interface {
	Hosts
	// AgentNow is box's agent container on host as the engine has it now.
	AgentNow(ctx context.Context, host, box string) (engine.Container, error)
	// DoctorMoved checks the new copy of a moved box on host, as boxes
	// doctor does, and fails naming every failed check.
	DoctorMoved(ctx context.Context, host, box string) error
	// SameEngine reports whether hosts a and b reach one engine.
	SameEngine(ctx context.Context, a, b string) (bool, error)
}

var _ apply.Mover = (*Mover)(nil)

// MoveKey reads the age identity in file, making it (mode 0600, in a
// directory of mode 0700) when it does not exist.
func MoveKey(file string) (*age.X25519Identity, error) {
	data, err := os.ReadFile(file)
	if err == nil {
		return age.ParseX25519Identity(strings.TrimSpace(lastLine(string(data))))
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(dir, ".move-key-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	text := "# age identity of a boxes move; it decrypts " + filepath.Base(strings.TrimSuffix(file, ".move-key")) + archive.Ext + "\n# public key: " + id.Recipient().String() + "\n" + id.String() + "\n"
	_, err = tmp.WriteString(text)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if err := os.Link(tmp.Name(), file); err != nil {
		return nil, err
	}
	return id, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func (m *Mover) step(box, msg string) {
	if m.Step != nil {
		m.Step(box, msg)
	}
}

// Save saves the box's /data on host to file, encrypted to key's identity.
func (m *Mover) Save(ctx context.Context, host, box, file, key string) (int64, error) {
	id, err := MoveKey(key)
	if err != nil {
		return 0, fmt.Errorf("the move's key: %w", err)
	}
	recipients := []age.Recipient{id.Recipient()}
	for _, s := range m.Recipients {
		r, err := age.ParseX25519Recipient(s)
		if err != nil {
			return 0, err
		}
		recipients = append(recipients, r)
	}
	// What a save killed before it published left behind: the box's lock is ours.
	if stale, err := filepath.Glob(filepath.Join(filepath.Dir(file), "."+box+"-*.partial")); err == nil {
		for _, f := range stale {
			_ = os.Remove(f)
		}
	}
	e, err := m.Hosts.BoxEngine(ctx, host)
	if err != nil {
		return 0, err
	}
	agent, err := m.Hosts.AgentNow(ctx, host, box)
	if err != nil {
		return 0, err
	}
	s := Save{Box: box, Agent: agent, Out: file, Recipients: recipients, Identity: id, Tools: m.Tools,
		Writer: m.Writer, Init: m.Init, Step: func(msg string) { m.step(box, "saving: "+msg) }}
	saved, err := s.Run(ctx, e)
	return saved.Summary.Bytes, err
}

func (m *Mover) agent(ctx context.Context, host, box string) (engine.Inside, string, error) {
	e, err := m.Hosts.BoxEngine(ctx, host)
	if err != nil {
		return nil, "", err
	}
	id, err := e.ContainerID(ctx, box, compose.AgentService)
	return e, id, err
}

func identities(key string) ([]age.Identity, error) {
	data, err := os.ReadFile(key)
	if err != nil {
		return nil, fmt.Errorf("the move's key: %w", err)
	}
	ids, err := age.ParseIdentities(strings.NewReader(string(data)))
	if err != nil {
		return nil, fmt.Errorf("the move's key %s: %w", key, err)
	}
	return ids, nil
}

// Restore restores file into the created, not yet started box on host.
func (m *Mover) Restore(ctx context.Context, host, box, file, key string) error {
	ids, err := identities(key)
	if err != nil {
		return err
	}
	e, id, err := m.agent(ctx, host, box)
	if err != nil {
		return err
	}
	return Restore(ctx, e, id, file, ids, 0) // the move wrote and verified this archive itself
}

// Check reads the restored /data back from the box and compares it with the
// archive: the same regular files, each with the archive's content hash.
func (m *Mover) Check(ctx context.Context, host, box, file, key string) (int, error) {
	ids, err := identities(key)
	if err != nil {
		return 0, err
	}
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	data, err := archive.Data(f, ids...)
	if err != nil {
		return 0, err
	}
	want, err := tarHashes(data)
	data.Close()
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", filepath.Base(file), err)
	}
	e, id, err := m.agent(ctx, host, box)
	if err != nil {
		return 0, err
	}
	restored, err := e.CopyFrom(ctx, id, hb.Data)
	if err != nil {
		return 0, err
	}
	got, err := tarHashes(restored)
	restored.Close()
	if err != nil {
		return 0, fmt.Errorf("reading the restored /data back: %w", err)
	}
	return len(want), CompareHashes(want, got)
}

// Finish resumes the started box and waits for hb init on the restored data.
func (m *Mover) Finish(ctx context.Context, host, box string) error {
	s := Seeder{Hosts: m.Hosts, Init: m.Init, Step: m.Step}
	return s.Finish(ctx, host, box)
}

// Doctor checks the moved box.
func (m *Mover) Doctor(ctx context.Context, host, box string) error {
	return m.Hosts.DoctorMoved(ctx, host, box)
}

// SameEngine reports whether the two hosts are one engine.
func (m *Mover) SameEngine(ctx context.Context, a, b string) (bool, error) {
	return m.Hosts.SameEngine(ctx, a, b)
}

// ErrRestoredDiffers is restored data that is not the archive's.
var ErrRestoredDiffers = errors.New("the restored data differs from the archive")

// tarHashes hashes every regular file of a tar stream of /data, by its name
// relative to /data; hb's quiesce marker, which the restore itself writes,
// is left out.
func tarHashes(r io.Reader) (map[string][sha256.Size]byte, error) {
	out := map[string][sha256.Size]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		name := strings.TrimPrefix(h.Name, "./")
		if name == hb.QuiescedMarker {
			continue
		}
		sum := sha256.New()
		if _, err := io.Copy(sum, tr); err != nil {
			return nil, err
		}
		var s [sha256.Size]byte
		sum.Sum(s[:0])
		out[name] = s
	}
}

// CompareHashes fails unless got holds exactly want's files with want's
// hashes, naming up to five that differ.
func CompareHashes(want, got map[string][sha256.Size]byte) error {
	var bad []string
	for name, sum := range want {
		g, ok := got[name]
		switch {
		case !ok:
			bad = append(bad, name+" is missing")
		case g != sum:
			bad = append(bad, name+" has other content")
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			bad = append(bad, name+" is not in the archive")
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	more := ""
	if len(bad) > 5 {
		more = fmt.Sprintf(" and %d more", len(bad)-5)
		bad = bad[:5]
	}
	return fmt.Errorf("%w: %s%s", ErrRestoredDiffers, strings.Join(bad, "; "), more)
}
