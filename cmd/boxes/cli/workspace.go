package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/docker"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
)

// workspace is one boxes.yaml with its lock, its engines and what they hold.
type workspace struct {
	env      *Env
	cfg      *spec.Config
	lock     *spec.Lock
	engines  map[string]*docker.Engine
	observed map[string]*reconcile.Observed
	tokens   reconcile.Tokens
	files    map[string]string // file → sha256 of its content
}

func (w *workspace) close() {
	for _, e := range w.engines {
		e.Close()
	}
}

func (w *workspace) image() string {
	if w.lock == nil || w.lock.Image == nil {
		return ""
	}
	return w.lock.Image.ID
}

// openWorkspace reads the files and connects to every engine boxes.yaml names.
func openWorkspace(ctx context.Context, env *Env, opts docker.Options) (*workspace, error) {
	cfg, err := loadConfig(env)
	if err != nil {
		return nil, err
	}
	lock, err := loadLock(env)
	if err != nil {
		return nil, err
	}
	w := &workspace{env: env, cfg: cfg, lock: lock, engines: map[string]*docker.Engine{}, tokens: reconcile.TokensBeside(env.File), files: map[string]string{}}
	for _, f := range []string{env.File, env.LockFile()} {
		data, err := os.ReadFile(f)
		if err == nil {
			sum := sha256.Sum256(data)
			w.files[filepath.Base(f)] = hex.EncodeToString(sum[:])
		}
	}
	hosts := []spec.Host{{}}
	for _, h := range cfg.Hosts {
		hosts = append(hosts, h)
	}
	for _, h := range hosts {
		e, err := docker.Connect(ctx, h, opts)
		if err != nil {
			w.close()
			return nil, err
		}
		w.engines[h.Name] = e
	}
	all := make([]*docker.Engine, 0, len(w.engines))
	for _, h := range hosts {
		all = append(all, w.engines[h.Name])
	}
	if err := docker.DistinctEngines(all); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// observedWorkspace is openWorkspace followed by observe: what the commands
// that act on boxes as they are start from.
func observedWorkspace(ctx context.Context, env *Env) (*workspace, error) {
	ws, err := openWorkspace(ctx, env, docker.Options{})
	if err != nil {
		return nil, err
	}
	if err := ws.observe(ctx); err != nil {
		ws.close()
		return nil, err
	}
	return ws, nil
}

// observe snapshots every engine in parallel.
func (w *workspace) observe(ctx context.Context) error {
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []string
	)
	w.observed = map[string]*reconcile.Observed{}
	var images []string
	if id := w.image(); id != "" {
		images = append(images, id)
	}
	for name, e := range w.engines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := e.Observe(ctx, images...)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err.Error())
				return
			}
			w.observed[name] = o
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		sort.Strings(errs)
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

type planOptions struct {
	replace []string
	target  []string
}

// plan observes and decides. It reads tokens of existing boxes, recovering a
// lost one from the box's executor container (and saying so).
func (w *workspace) plan(ctx context.Context, opts planOptions) (*reconcile.Plan, error) {
	if err := w.observe(ctx); err != nil {
		return nil, err
	}
	in := reconcile.Input{
		Config:      w.cfg,
		Image:       w.image(),
		Observed:    w.observed,
		Tokens:      map[string]string{},
		Replace:     map[string]bool{},
		Target:      map[string]bool{},
		VolumeSizes: map[string]map[string]int64{},
		Backups:     newestBackups(filepath.Join(w.env.Dir(), "backups")),
	}
	for _, n := range opts.replace {
		if _, ok := w.cfg.Box(n); !ok {
			return nil, fmt.Errorf("--replace %s: no such box in boxes.yaml", n)
		}
		in.Replace[n] = true
	}
	for _, n := range opts.target {
		in.Target[n] = true
	}
	declared := map[string]bool{}
	for _, b := range w.cfg.Boxes {
		declared[b.Name] = true
		o := w.observed[b.Host]
		if o == nil {
			continue
		}
		r := o.Of(b.Name)
		if r.Empty() {
			continue
		}
		token, ok, err := w.tokens.Get(b.Name)
		if err != nil {
			return nil, err
		}
		if !ok {
			token, ok = w.recoverToken(ctx, b, r)
		}
		if ok {
			in.Tokens[b.Name] = token
		}
	}
	for host, o := range w.observed {
		for _, name := range o.Boxes() {
			// Sizes are for the plan's deletes: an undeclared box outside
			// --target is not one of them.
			if declared[name] || (len(in.Target) > 0 && !in.Target[name]) {
				continue
			}
			if _, done := in.VolumeSizes[host]; done {
				continue
			}
			sizes, err := w.engines[host].VolumeSizes(ctx)
			if err != nil {
				w.env.Warnf("%v", err)
				sizes = map[string]int64{}
			}
			in.VolumeSizes[host] = sizes
		}
	}
	return reconcile.NewPlan(in)
}

func (w *workspace) recoverToken(ctx context.Context, b spec.Box, r reconcile.Resources) (string, bool) {
	for _, service := range []string{compose.ExecutorService, compose.AgentService} {
		c, ok := r.Container(service)
		if !ok {
			continue
		}
		envv, err := w.engines[b.Host].ContainerEnv(ctx, c.ID)
		if err != nil {
			continue
		}
		token, ok := reconcile.TokenFromEnv(envv)
		if !ok || token == compose.Redacted {
			continue
		}
		if err := w.tokens.Put(b.Name, token); err != nil {
			w.env.Warnf("recovered the token of %s but could not store it: %v", b.Name, err)
			return token, true
		}
		w.env.Warnf("the token of %s was missing from .boxes/secrets; recovered it from its %s container", b.Name, service)
		return token, true
	}
	return "", false
}

// fingerprint digests what a plan saw: both files and every labelled resource.
// Unlabelled resources are left out except through the plan they shaped.
func (w *workspace) fingerprint(p *reconcile.Plan) string {
	type seen struct {
		Files    map[string]string              `json:"files"`
		Observed map[string]*reconcile.Observed `json:"observed"`
		Plan     *reconcile.Plan                `json:"plan"`
	}
	strip := map[string]*reconcile.Observed{}
	for h, o := range w.observed {
		c := *o
		c.Unmanaged = reconcile.Unmanaged{}
		strip[h] = &c
	}
	data, _ := json.Marshal(seen{Files: w.files, Observed: strip, Plan: p}) // plain data always marshals
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// archiveName is how save names archives: NAME-YYYYMMDD-HHMMSS.tar.gz.age (.gpg from the older tool).
var archiveName = regexp.MustCompile(`^([a-z][a-z0-9-]*)-[0-9]{8}-[0-9]{6}\.tar\.gz\.(age|gpg)$`)

// newestBackups maps a box name to its newest archive in dir (NAME-*.tar.gz.age or .gpg).
func newestBackups(dir string) map[string]string {
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return out
	}
	newest := map[string]int64{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		m := archiveName.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		box := m[1]
		info, err := e.Info()
		if err != nil {
			continue
		}
		if t := info.ModTime().UnixNano(); t >= newest[box] {
			newest[box] = t
			out[box] = filepath.Join("backups", name)
		}
	}
	return out
}
