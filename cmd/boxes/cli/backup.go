package cli

import (
	"archive/tar"
	"bufio"
	"bytes"
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
	"github.com/moby/term"
	"github.com/spf13/cobra"

	"github.com/hermes-box/boxes/archive"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
)

// envPassphrase holds the archive passphrase for scripts; without it boxes asks on the terminal.
const envPassphrase = "BOXES_PASSPHRASE"

// envIdentity names an age identity file, for archives saved to boxes.yaml's
// archive.recipients.
const envIdentity = "BOXES_IDENTITY"

// quiescedMarker is hb's marker (guest/hb QUIESCED): while it exists, hb
// init waits for hb resume.
const quiescedMarker = "data/.hb/quiesced"

func newSaveCommand(env *Env) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "save NAME",
		Short: "Archive a box's /data, encrypted, to backups/NAME-YYYYMMDD-HHMMSS" + archive.Ext,
		Long: `Archive a box's /data to an age-encrypted file: under the per-box lock,
quiesce the box (hb quiesce), stream /data out with a manifest of the image
and tool versions, encrypt it to boxes.yaml's archive.recipients (age keys;
load and extract then read ` + envIdentity + `, an age identity file) or else with
a passphrase (` + envPassphrase + `, else asked on the terminal), verify it by
decrypting and reading it all back, then publish it without overwriting
anything. The box is resumed whatever happens.`,
		Args: exactlyOne("save", "box name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return save(cmd.Context(), env, args[0], out)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the archive to FILE (default backups/NAME-YYYYMMDD-HHMMSS"+archive.Ext+" beside boxes.yaml)")
	return cmd
}

func save(ctx context.Context, env *Env, name, out string) error {
	if out == "" {
		out = filepath.Join(env.Dir(), "backups", name+"-"+time.Now().UTC().Format("20060102-150405")+archive.Ext)
	}
	if _, err := os.Lstat(out); err == nil {
		return withHint(fmt.Errorf("%s exists; save never overwrites an archive", shown(out)), "name another file with -o")
	}
	ws, e, agent, err := boxContainer(ctx, env, name, compose.AgentService, false)
	if err != nil {
		return err
	}
	defer ws.close()
	lock, err := reconcile.LockBox(env.File, name, "boxes save")
	if err != nil {
		return err
	}
	defer lock.Unlock()
	recipients, identity, err := saveKeys(env, ws.cfg.Recipients, name)
	if err != nil {
		return err
	}

	if agent.State == "running" {
		// hb init must not find the marker half-way through.
		if err := waitInit(ctx, env, e, name, agent); err != nil {
			return err
		}
		// Resume is registered first: a quiesce that fails half-way may
		// have written its marker already.
		defer func() {
			if err := hbRoot(context.WithoutCancel(ctx), e, agent.ID, "resume"); err != nil {
				env.Warnf("resuming %s failed: %v; run boxes exec -u root %s -- hb resume", name, err, name)
			}
		}()
		if err := hbRoot(ctx, e, agent.ID, "quiesce"); err != nil {
			return fmt.Errorf("quiescing %s: %w", name, err)
		}
	}
	m := archive.Manifest{Format: archive.Format, Box: name, Created: time.Now().UTC(), Image: agent.Image, Writer: "boxes " + versionString()}
	if l := ws.lock; l != nil && l.Image != nil && l.Image.ID == agent.Image {
		m.Tools = l.Image.Tools
	} else if tools, err := e.ToolVersions(ctx, agent.Image); err == nil {
		m.Tools = tools
	}

	if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+name+"-*.partial")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	fmt.Fprintf(env.Err, "saving %s: streaming /data\n", name)
	data, err := e.CopyFrom(ctx, agent.ID, "/data")
	if err != nil {
		tmp.Close()
		return err
	}
	wrote, err := archive.Write(tmp, m, data, recipients...)
	data.Close()
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing the archive: %w", err)
	}

	fmt.Fprintf(env.Err, "saving %s: verifying the archive\n", name)
	_, read, err := archive.VerifyFile(tmp.Name(), identity)
	if err != nil {
		return fmt.Errorf("the archive does not read back, so it was not published: %w", err)
	}
	if read != wrote {
		return fmt.Errorf("the archive reads back %+v but %+v was written, so it was not published", read, wrote)
	}
	// A hard link publishes the file whole, and fails if the name is taken.
	if err := os.Link(tmp.Name(), out); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return withHint(fmt.Errorf("%s appeared while saving; not overwriting it", shown(out)), "name another file with -o")
		}
		return err
	}
	info, _ := os.Stat(out)
	fmt.Fprintf(env.Out, "saved %s to %s: %d files, %d directories, %s of data, %s archive, verified\n",
		name, shown(out), wrote.Files, wrote.Dirs, reconcile.HumanSize(wrote.Bytes), reconcile.HumanSize(info.Size()))
	return nil
}

// runHB runs hb ARGS as user in container id and returns what it printed.
func runHB(ctx context.Context, e *docker.Engine, id, user string, args ...string) (stdout []byte, stderr string, code int, err error) {
	var out, errb bytes.Buffer
	code, err = e.Exec(ctx, id, docker.ExecOptions{Cmd: append([]string{compose.HB}, args...), User: user, Stdout: &out, Stderr: &errb})
	return out.Bytes(), strings.TrimSpace(errb.String()), code, err
}

// hbRoot runs hb ARGS as root in the agent container; a non-zero exit is an error.
func hbRoot(ctx context.Context, e *docker.Engine, id string, args ...string) error {
	_, stderr, code, err := runHB(ctx, e, id, "root", args...)
	if err == nil && code != 0 {
		err = fmt.Errorf("hb %s exited %d: %s", strings.Join(args, " "), code, stderr)
	}
	return err
}

func newExtractCommand(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "extract FILE [DIR]",
		Short: "Decrypt, check and unpack an archive into DIR (no Docker needed)",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return fmt.Errorf("extract needs an archive and, optionally, a directory")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			file := args[0]
			dir := archive.TrimExt(filepath.Base(file))
			if len(args) == 2 {
				dir = args[1]
			}
			// Before the passphrase is asked for: extract never writes into files it did not make.
			if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
				return withHint(fmt.Errorf("%s is not empty; extract writes only into a new or empty directory", dir), "name another directory: boxes extract %s DIR", file)
			}
			id, err := openIdentity(env, file)
			if err != nil {
				return err
			}
			m, sum, err := archive.ExtractFile(file, dir, archive.ExtractOptions{
				Options: archive.Options{Identities: id, Progress: watch(env)}, Reserve: extractReserve})
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Out, "extracted %s (box %s, saved %s) to %s: %d files, %d directories, %s\n",
				shown(file), m.Box, m.Created.Format(time.RFC3339), filepath.Join(dir, "data"), sum.Files, sum.Dirs, reconcile.HumanSize(sum.Bytes))
			return nil
		},
	}
}

// openIdentity is what decrypts archive file: the age identities in the
// file $BOXES_IDENTITY names, else the passphrase.
func openIdentity(env *Env, file string) ([]age.Identity, error) {
	if _, err := os.Stat(file); err != nil {
		return nil, err
	}
	if !archive.IsArchiveName(file) {
		return nil, withHint(fmt.Errorf("%s is not a boxes archive", shown(file)), "boxes reads *%s, *%s and the smolvm tool's *%s", archive.Ext, archive.ExtGzip, archive.ExtLegacy)
	}
	// The smolvm tool's archives open with a passphrase only.
	if path := os.Getenv(envIdentity); path != "" && !strings.HasSuffix(file, archive.ExtLegacy) {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", envIdentity, err)
		}
		defer f.Close()
		ids, err := age.ParseIdentities(f)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", envIdentity, path, err)
		}
		return ids, nil
	}
	pass, err := passphrase(env, "the passphrase of "+filepath.Base(file), false)
	if err != nil {
		return nil, err
	}
	id, err := archive.PassphraseIdentity(pass)
	if err != nil {
		return nil, err
	}
	return []age.Identity{id}, nil
}

// saveKeys are the recipients save encrypts to and the identity it verifies
// with: boxes.yaml's archive.recipients plus a one-time key that save
// forgets once it has read the archive back, or else a passphrase.
func saveKeys(env *Env, recipients []string, name string) ([]age.Recipient, age.Identity, error) {
	if len(recipients) == 0 {
		pass, err := passphrase(env, "a passphrase for "+name+"'s archive", true)
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

func newLoadCommand(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "load FILE NAME",
		Short: "Create box NAME from an archive: checked first, restored quiesced, fresh token, rewired, doctored",
		Long: `Create box NAME (declared in boxes.yaml, with no resources yet) from an
archive. The archive is decrypted and checked whole before anything is
created; then the box is created, its /data restored while it is quiesced,
given a fresh Executor token, started so that hb init rewires Claude and Codex
to it, and checked with boxes doctor. A box declared stopped is stopped again.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 2 {
				return fmt.Errorf("load needs an archive and a box name: boxes load FILE NAME")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return load(cmd.Context(), env, args[0], args[1])
		},
	}
}

func load(ctx context.Context, env *Env, file, name string) error {
	// What needs no passphrase first: the box and the image.
	ws, err := observedWorkspace(ctx, env)
	if err != nil {
		return err
	}
	defer ws.close()
	box, ok := ws.cfg.Box(name)
	if !ok {
		return withHint(fmt.Errorf("no box %q in %s", name, shown(env.File)), "declare it under boxes: first; load creates it from the archive")
	}
	e, o := ws.engines[box.Host], ws.observed[box.Host]
	for host, other := range ws.observed {
		if !other.Of(name).Empty() {
			return withHint(fmt.Errorf("box %s already exists on %s; load creates boxes, it never overwrites one", name, reconcile.HostLabel(host)), "load it under another name, or boxes save then boxes rm %s first", name)
		}
	}
	image := ws.image()
	if image == "" || !o.Images[image] {
		return withHint(fmt.Errorf("the engine lacks boxes.lock's image %q", image), "boxes build makes it")
	}

	id, err := openIdentity(env, file)
	if err != nil {
		return err
	}
	m, sum, err := archive.VerifyFileWith(file, archive.Options{Identities: id, Progress: watch(env)})
	if err != nil {
		return fmt.Errorf("%s: %w; nothing was created", shown(file), err)
	}
	fmt.Fprintf(env.Err, "loading %s: archive of box %s from %s, %d files, checked\n", name, m.Box, m.Created.Format(time.RFC3339), sum.Files)
	if m.Legacy() {
		fmt.Fprintf(env.Err, "loading %s: an archive of the smolvm tool; %s\n", name, runtimeVersions(m))
	}
	if m.Image != "" && m.Image != image {
		env.Warnf("the archive was saved from image %s; the box gets boxes.lock's %s", short(m.Image), short(image))
	}
	lock, err := reconcile.LockBox(env.File, name, "boxes load")
	if err != nil {
		return err
	}
	defer lock.Unlock()

	token, err := reconcile.NewToken()
	if err != nil {
		return err
	}
	if err := ws.tokens.Put(name, token); err != nil {
		return err
	}
	project, err := compose.Project(compose.Input{Box: box, Image: image, Token: token, WorkDir: env.Dir(), ConfigFile: env.File})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Err, "loading %s: creating the box\n", name)
	if err := e.Create(ctx, project, false); err != nil {
		return err
	}
	agent, err := e.ServiceContainer(ctx, name, compose.AgentService)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Err, "loading %s: restoring /data\n", name)
	if err := restoreData(ctx, e, agent.ID, file, id); err != nil {
		return err
	}
	fmt.Fprintf(env.Err, "loading %s: starting, with a fresh token\n", name)
	if err := e.Start(ctx, project); err != nil {
		return err
	}
	if _, err := e.WaitReady(ctx, name, token); err != nil {
		return err
	}
	if err := hbRoot(ctx, e, agent.ID, "resume"); err != nil {
		return err
	}
	if err := waitInit(ctx, env, e, name, reconcile.Container{ID: agent.ID}); err != nil {
		return err
	}
	if err := ws.observe(ctx); err != nil {
		return err
	}
	rep, err := doctor(ctx, ws, name)
	if err != nil {
		return err
	}
	printDoctor(env, rep)
	if box.State == spec.Stopped {
		if err := e.Stop(ctx, compose.ProjectName(name)); err != nil {
			return err
		}
	}
	if !rep.OK {
		return fmt.Errorf("loaded %s from %s, but doctor found problems", name, shown(file))
	}
	fmt.Fprintf(env.Out, "loaded %s from %s\n", name, shown(file))
	return nil
}

// restoreData restores archive file into the created, not yet started agent
// container id. hb's quiesce marker goes first: should the restore stop
// half-way, the box comes up quiesced (hb init waits) instead of running on
// partial data.
func restoreData(ctx context.Context, e *docker.Engine, id, file string, identities []age.Identity) error {
	if err := e.CopyTo(ctx, id, "/", markerTar()); err != nil {
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

// archiveSeeder restores the restore: archives of the boxes apply creates.
type archiveSeeder struct {
	env        *Env
	ws         *workspace
	identities []age.Identity
}

// newSeeder asks for the passphrase and checks every restore: archive of
// plan whole, before apply changes anything; nil when the plan restores none.
func newSeeder(env *Env, ws *workspace, p *reconcile.Plan) (reconcile.Seeder, error) {
	s := &archiveSeeder{env: env, ws: ws}
	for _, b := range p.Boxes {
		if b.Action != reconcile.Create || b.Restore == "" {
			continue
		}
		path := s.path(b.Restore)
		if s.identities == nil {
			ids, err := openIdentity(env, path)
			if err != nil {
				return nil, fmt.Errorf("box %s: restore: %w", b.Name, err)
			}
			s.identities = ids
		}
		m, sum, err := archive.VerifyFile(path, s.identities...)
		if err != nil {
			return nil, fmt.Errorf("box %s: restore: %s: %w; nothing was changed", b.Name, b.Restore, err)
		}
		fmt.Fprintf(env.Err, "restore: %s for box %s holds box %s from %s, %d files, checked\n", b.Restore, b.Name, m.Box, m.Created.Format(time.RFC3339), sum.Files)
	}
	if s.identities == nil {
		return nil, nil
	}
	return s, nil
}

// path is a restore: path, relative to boxes.yaml's directory.
func (s *archiveSeeder) path(archive string) string {
	if filepath.IsAbs(archive) {
		return archive
	}
	return filepath.Join(s.env.Dir(), archive)
}

func (s *archiveSeeder) Seed(ctx context.Context, host, box, archive string) error {
	e := s.ws.engines[host]
	agent, err := e.ServiceContainer(ctx, box, compose.AgentService)
	if err != nil {
		return err
	}
	return restoreData(ctx, e, agent.ID, s.path(archive), s.identities)
}

func (s *archiveSeeder) Finish(ctx context.Context, host, box string) error {
	e := s.ws.engines[host]
	agent, err := e.ServiceContainer(ctx, box, compose.AgentService)
	if err != nil {
		return err
	}
	if err := hbRoot(ctx, e, agent.ID, "resume"); err != nil {
		return err
	}
	return waitInit(ctx, s.env, e, box, reconcile.Container{ID: agent.ID})
}

// markerTar is a tar holding hb's quiesce marker under data/.hb.
func markerTar() io.Reader {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	stamp := []byte(time.Now().UTC().Format(time.RFC3339) + " boxes load\n")
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "data/.hb/", Mode: 0o755, ModTime: time.Now()})
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: quiescedMarker, Mode: 0o644, Size: int64(len(stamp)), ModTime: time.Now()})
	_, _ = tw.Write(stamp)
	_ = tw.Close()
	return &buf
}

// passphrase is $BOXES_PASSPHRASE, else asked on the terminal (twice when
// confirm) without echo.
func passphrase(env *Env, what string, confirm bool) (string, error) {
	if p, err := envPassphraseValue(); p != "" || err != nil {
		return p, err
	}
	in, ok := env.In.(*os.File)
	if !ok || !term.IsTerminal(in.Fd()) {
		return "", withHint(fmt.Errorf("no passphrase: %s is not set and there is no terminal to ask on", envPassphrase), "set %s", envPassphrase)
	}
	read := func(prompt string) (string, error) {
		state, err := term.SaveState(in.Fd())
		if err != nil {
			return "", err
		}
		defer term.RestoreTerminal(in.Fd(), state)
		if err := term.DisableEcho(in.Fd(), state); err != nil {
			return "", err
		}
		fmt.Fprintf(env.Err, "%s: ", prompt)
		line, err := bufio.NewReader(in).ReadString('\n')
		fmt.Fprintln(env.Err)
		return strings.TrimRight(line, "\r\n"), err
	}
	p, err := read("Enter " + what)
	if err != nil {
		return "", err
	}
	if p == "" {
		return "", errors.New("the passphrase is empty")
	}
	if confirm {
		again, err := read("Enter it again")
		if err != nil {
			return "", err
		}
		if again != p {
			return "", errors.New("the passphrases differ")
		}
	}
	return p, nil
}
