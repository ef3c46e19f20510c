// Package workspace is one boxes.yaml with its boxes.lock, the engines of its
// hosts and what they hold: the files read once, hosts connected only when a
// command needs them, locks taken before anything is observed.
package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/hint"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/statedir"
)

// Kinds reaches each host through the connector of its kind.
type Kinds map[spec.HostKind]engine.Connector

// Connect reaches host h's engine through the connector of h's kind.
func (k Kinds) Connect(ctx context.Context, h spec.Host) (engine.Engine, error) {
	c, ok := k[h.Kind()]
	if !ok {
		return nil, fmt.Errorf("host %s: this boxes reaches no engine of kind %s", reconcile.HostName(h.Name), h.Kind())
	}
	return c.Connect(ctx, h)
}

// MachineAddresses are the addresses of the machine host h's engine runs
// on, from the connector of h's kind without reaching the engine; none
// when that connector cannot tell them so.
func (k Kinds) MachineAddresses(h spec.Host) ([]netip.Addr, error) {
	if f, ok := k[h.Kind()].(engine.MachineFinder); ok {
		return f.MachineAddresses(h)
	}
	return nil, nil
}

// ErrNoConfig is returned when boxes.yaml does not exist.
var ErrNoConfig = hint.New("boxes.yaml not found", "run boxes init to write one, or pass -f FILE")

// Options tune how a workspace is opened.
type Options struct {
	// Connect reaches a host's engine; it is asked at most once per host,
	// and only for hosts a command needs.
	Connect engine.Connector
	// Shown is how messages name a file (e.g. relative to the working
	// directory); nil names it as given.
	Shown func(path string) string
	// Warn receives warnings (a recovered token, an unreadable volume size).
	Warn func(format string, args ...any)
	// Confine limits the boxes the commands that work on one box (those
	// that observe it with ObserveBox) may act on.
	Confine Confine
}

// Workspace is one boxes.yaml, its lock, and its engines.
type Workspace struct {
	// Path is boxes.yaml's absolute path; boxes.lock and .boxes/ live beside it.
	Path   string
	Config *spec.Config
	// Lock is boxes.lock, nil when there is none.
	Lock   *spec.Lock
	Tokens statedir.Tokens
	// Files maps each file's base name to the sha256 of the very bytes parsed.
	Files map[string]string
	// Observed holds the last snapshot of each host observed.
	Observed map[string]*engine.Observed

	// declared are the boxes boxes.yaml names: Config.Boxes is they and,
	// once the pools' hosts are observed, the pools' boxes (WithPools).
	declared []spec.Box

	opts    Options
	mu      sync.Mutex
	engines map[string]engine.Engine
	locks   []*statedir.FileLock
	// applyLocked is set once LockApply has taken the apply lock.
	applyLocked bool
	// commands are the credentials' cmd: run so far, each once.
	commands commands
}

// Open reads boxes.yaml and boxes.lock at path (the lock may be missing). It
// connects to nothing.
func Open(path string, opts Options) (*Workspace, error) {
	if opts.Shown == nil {
		opts.Shown = func(p string) string { return p }
	}
	if opts.Warn == nil {
		opts.Warn = func(string, ...any) {}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	w := &Workspace{Path: abs, Tokens: statedir.Beside(abs).Tokens(), Files: map[string]string{},
		Observed: map[string]*engine.Observed{}, opts: opts, engines: map[string]engine.Engine{}}
	data, err := os.ReadFile(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &noConfigError{file: opts.Shown(abs)}
	}
	if err != nil {
		return nil, err
	}
	w.fingerprintFile(abs, data)
	if w.Config, err = spec.Parse(opts.Shown(abs), data); err != nil {
		return nil, err
	}
	// Messages name the file as the user sees it; everything else wants the absolute path.
	w.Config.Path = abs
	w.declared = w.Config.Boxes
	if w.Config.FleetImplied {
		opts.Warn("%s has no fleet: key; its boxes are fleet %q, the directory's name (add fleet: %s to keep it if the directory moves)", opts.Shown(abs), w.Config.Fleet, w.Config.Fleet)
	}
	lockPath := w.LockPath()
	data, err = os.ReadFile(lockPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return w, nil
	case err != nil:
		return nil, err
	}
	w.fingerprintFile(lockPath, data)
	if w.Lock, err = spec.ParseLock(opts.Shown(lockPath), data); err != nil {
		return nil, err
	}
	w.Lock.Path = lockPath
	return w, nil
}

func (w *Workspace) fingerprintFile(path string, data []byte) {
	sum := sha256.Sum256(data)
	w.Files[filepath.Base(path)] = hex.EncodeToString(sum[:])
}

// Dir is the directory of boxes.yaml.
func (w *Workspace) Dir() string { return filepath.Dir(w.Path) }

// LockPath is the path of boxes.lock.
func (w *Workspace) LockPath() string { return LockPathOf(w.Path) }

// LockPathOf is the path of the boxes.lock beside boxes.yaml at file, for
// the commands that use the lock without the workspace.
func LockPathOf(file string) string { return filepath.Join(filepath.Dir(file), "boxes.lock") }

// Image is the locked image ID, "" when the lock has none.
func (w *Workspace) Image() string {
	if w.Lock == nil || w.Lock.Image == nil {
		return ""
	}
	return w.Lock.Image.ID
}

// Hosts are the host names boxes.yaml can reach: "" (the local engine) first,
// then its hosts: in name order.
func (w *Workspace) Hosts() []string {
	hosts := []string{""}
	for _, h := range w.Config.Hosts {
		hosts = append(hosts, h.Name)
	}
	sort.Strings(hosts[1:])
	return hosts
}

// Engine is host's engine, connected on first use.
func (w *Workspace) Engine(ctx context.Context, host string) (engine.Engine, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e, ok := w.engines[host]; ok {
		return e, nil
	}
	h := spec.Host{}
	if host != "" {
		var ok bool
		if h, ok = w.Config.Hosts[host]; !ok {
			return nil, fmt.Errorf("no host %q in %s", host, w.opts.Shown(w.Path))
		}
	}
	if w.opts.Connect == nil {
		return nil, fmt.Errorf("no way to reach %s", reconcile.HostLabel(host))
	}
	e, err := w.opts.Connect.Connect(ctx, h)
	if err != nil {
		return nil, err
	}
	w.engines[host] = e
	return e, nil
}

// Engines are the engines connected so far, by host name.
func (w *Workspace) Engines() map[string]engine.Lifecycle {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]engine.Lifecycle{}
	for h, e := range w.engines {
		out[h] = e
	}
	return out
}

// LockApply takes the one-apply-at-a-time lock; Close releases it.
func (w *Workspace) LockApply(what string) error {
	l, err := statedir.LockApply(w.Path, what)
	if err != nil {
		return err
	}
	w.locks = append(w.locks, l)
	w.applyLocked = true
	return nil
}

// LockBox takes box name's lock; Close releases it.
func (w *Workspace) LockBox(name, what string) error {
	l, err := statedir.LockBox(w.Path, name, what)
	if err != nil {
		return err
	}
	w.locks = append(w.locks, l)
	return nil
}

// Close releases the locks and the engine connections.
func (w *Workspace) Close() {
	for i := len(w.locks) - 1; i >= 0; i-- {
		_ = w.locks[i].Unlock()
	}
	w.locks = nil
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.engines {
		_ = e.Close()
	}
	w.engines = map[string]engine.Engine{}
}

// Observe snapshots hosts in parallel (every host when none is named). The
// errors of several hosts come back joined, in host order.
func (w *Workspace) Observe(ctx context.Context, hosts ...string) error {
	if len(hosts) == 0 {
		hosts = w.Hosts()
	}
	if err := errors.Join(w.observeEach(ctx, hosts)...); err != nil {
		return err
	}
	return w.distinct(ctx, hosts)
}

// observeEach snapshots hosts in parallel, keeping each snapshot taken; the
// errors are by host, in hosts' order.
func (w *Workspace) observeEach(ctx context.Context, hosts []string) []error {
	var images []string
	if id := w.Image(); id != "" {
		images = append(images, id)
	}
	errs := make([]error, len(hosts))
	got := make([]*engine.Observed, len(hosts))
	var wg sync.WaitGroup
	for i, host := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := w.Engine(ctx, host)
			if err == nil {
				got[i], err = e.Observe(ctx, images...)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, host := range hosts {
		if got[i] != nil {
			w.Observed[host] = got[i]
		}
	}
	w.Config.Boxes = reconcile.WithPools(w.Config, w.declared, w.Observed)
	return errs
}

// distinct fails when two of hosts' engines are one engine: boxes would
// see each box twice, and a move between them would delete the only copy.
func (w *Workspace) distinct(ctx context.Context, hosts []string) error {
	if len(hosts) < 2 {
		return nil
	}
	engines := make([]engine.Engine, 0, len(hosts))
	for _, host := range hosts {
		e, err := w.Engine(ctx, host)
		if err != nil {
			return err
		}
		engines = append(engines, e)
	}
	first := map[string]string{} // engine ID → the first host that reaches it
	for i, e := range engines {
		id := e.ID()
		if id == "" {
			continue
		}
		if host, ok := first[id]; ok {
			return e.SameEngineAs(host)
		}
		first[id] = hosts[i]
	}
	return nil
}

// HostOf is the host box name lives on: its declared host, else (for a box
// boxes.yaml does not declare) the first host, in Hosts order, that holds
// resources of it once observed: one holding this fleet's first, then one
// holding a box of no fleet, then any (so that a refusal can name the fleet
// that holds it).
func (w *Workspace) HostOf(name string) (host string, declared bool) {
	if b, ok := w.Config.Box(name); ok {
		return b.Host, true
	}
	best, found := 3, ""
	for _, h := range w.Hosts() {
		o := w.Observed[h]
		if o == nil || o.Of(name).Empty() {
			continue
		}
		r, rank := o.Of(name), 2
		switch {
		case r.HeldBy(w.Config.Fleet) != "":
		case r.Owned(w.Config.Fleet):
			rank = 0
		default:
			rank = 1
		}
		if rank < best {
			best, found = rank, h
		}
	}
	return found, false
}

// ObserveBox observes only what box name needs: its declared host, or every
// host when boxes.yaml does not declare it. A box another fleet holds is an
// *OtherFleetError, and one no fleet declares a *NoFleetError, before
// anything is done to it: only rm (ObserveRemoval) reaches the latter. A box
// the workspace's Confine keeps out is refused on what was just observed.
func (w *Workspace) ObserveBox(ctx context.Context, name string) (string, engine.Resources, error) {
	return w.observeOwn(ctx, name, false)
}

// ObserveRemoval is ObserveBox for rm, which alone reaches a box of no fleet.
func (w *Workspace) ObserveRemoval(ctx context.Context, name string) (string, engine.Resources, error) {
	return w.observeOwn(ctx, name, true)
}

func (w *Workspace) observeOwn(ctx context.Context, name string, noFleetOK bool) (string, engine.Resources, error) {
	host, r, err := w.observeBox(ctx, name)
	if err == nil {
		err = w.Claim(name, host, r, noFleetOK)
	}
	if err == nil {
		err = w.confined(host, name, r)
	}
	if err != nil {
		return host, r, err
	}
	// A box a save that died left frozen is thawed by the next command
	// that touches it.
	a, ok := r.Container(compose.AgentService)
	if !ok || (a.State != engine.Running && a.State != engine.Paused) {
		return host, r, nil
	}
	rec, found, err := statedir.Beside(w.Path).Freezes().Get(name)
	// A bad record is thawed all the same (backup.Thaw takes it, see
	// Freezes.TakeStale): resuming a box that is not frozen does nothing,
	// and it is what boxes plan, which refuses the record, tells to do.
	var bad *statedir.BadRecordError
	if err != nil && !errors.As(err, &bad) {
		return "", engine.Resources{}, err
	}
	if bad == nil && (!found || rec.Held) {
		return host, r, nil
	}
	e, err := w.Engine(ctx, host)
	if err != nil {
		return "", engine.Resources{}, err
	}
	if bad != nil {
		w.opts.Warn("%s cannot be used (%v): resuming %s, which a save cut short may have left frozen, and removing the file", bad.Path, bad.Err, name)
	}
	if err := backup.Thaw(ctx, w.Path, e, name); err != nil {
		w.opts.Warn("%s was left frozen by a save that died, and resuming it failed: %v", name, err)
		return host, r, nil
	}
	if err := w.Observe(ctx, host); err != nil {
		return "", engine.Resources{}, err
	}
	return host, w.Observed[host].Of(name), nil
}

func (w *Workspace) observeBox(ctx context.Context, name string) (string, engine.Resources, error) {
	if b, ok := w.Config.Box(name); ok {
		if err := w.Observe(ctx, b.Host); err != nil {
			return "", engine.Resources{}, err
		}
		return b.Host, w.Observed[b.Host].Of(name), nil
	}
	if err := w.Observe(ctx); err != nil {
		return "", engine.Resources{}, err
	}
	host, _ := w.HostOf(name)
	if o := w.Observed[host]; o != nil {
		return host, o.Of(name), nil
	}
	return host, engine.Resources{}, nil
}

// Container is box name's container of service as last observed, with the
// host it is on. running requires it to be up.
func (w *Workspace) Container(name, service string, running bool) (string, engine.Container, error) {
	host, declared := w.HostOf(name)
	if o := w.Observed[host]; o != nil {
		if c, ok := o.Of(name).Container(service); ok {
			if running && c.State != engine.Running {
				return host, c, &NotRunningError{Box: name, Service: service, State: c.State, Holder: statedir.BoxHolder(w.Path, name)}
			}
			return host, c, nil
		}
	}
	if !declared {
		return "", engine.Container{}, w.Undeclared(name)
	}
	return host, engine.Container{}, &NoContainerError{Box: name, Service: service, Holder: statedir.BoxHolder(w.Path, name)}
}

// Undeclared is the error for a box name boxes.yaml does not declare.
func (w *Workspace) Undeclared(name string) error {
	e := &UndeclaredError{Box: name, File: w.opts.Shown(w.Path)}
	for _, b := range w.Config.Boxes {
		e.Declared = append(e.Declared, b.Name)
	}
	return e
}

// Fingerprint digests what plan p was made from: the bytes of both files,
// what was observed, and the plan's own actions.
func (w *Workspace) Fingerprint(p *reconcile.Plan) string {
	return reconcile.Fingerprint(w.Files, w.Config.Fleet, w.Observed, p)
}
