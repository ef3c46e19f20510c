package workspace

import (
	"context"
	"errors"
	"fmt"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/par"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/statedir"
)

// Plan observes every host and decides. It reads the tokens of existing
// boxes, recovering a lost one from the box's containers (with a warning).
func (w *Workspace) Plan(ctx context.Context, opts reconcile.PlanOptions) (*reconcile.Plan, error) {
	for _, n := range opts.Replace {
		if _, ok := w.Config.Box(n); !ok {
			return nil, fmt.Errorf("--replace %s: %w", n, w.Undeclared(n))
		}
	}
	if err := w.observeForPlan(ctx, opts.Target); err != nil {
		return nil, err
	}
	if exposed, err := w.Tokens.Exposed(); err == nil {
		for _, e := range exposed {
			w.opts.Warn("secret %s is readable by others (%04o, want %04o); boxes apply restores it", e.Path, e.Mode.Perm(), e.Want)
		}
	}
	in := reconcile.Input{
		Config:   w.Config,
		Image:    w.Image(),
		ImageRef: w.imageRef(),
		Observed: w.Observed,
		Replace:  map[string]bool{},
		Target:   map[string]bool{},
		Backups:  w.Backups(),
		Frozen:   map[string]bool{},
	}
	// What a kill cut short is seen by every plan, and done again by
	// apply: restores, saves that left a box frozen, moves. A record that
	// cannot be read fails the plan rather than be forgotten.
	state := statedir.Beside(w.Path)
	var err error
	if in.Restoring, err = state.Restores().All(); err != nil {
		return nil, err
	}
	frozen, err := state.Freezes().Stale()
	if err != nil {
		return nil, err
	}
	for name := range frozen {
		in.Frozen[name] = true
	}
	if in.Moves, err = state.Moves().All(); err != nil {
		return nil, err
	}
	for _, n := range opts.Replace {
		in.Replace[n] = true
	}
	for _, n := range opts.Target {
		in.Target[n] = true
	}
	doors, unread := w.Doors(ctx, in.Target)
	in.Doors, in.Unread = doors, map[string]bool{}
	for name := range unread {
		in.Unread[name] = true
	}
	engines := map[string]engine.VolumeSizer{}
	for _, host := range w.Hosts() {
		if w.Observed[host] == nil {
			continue
		}
		e, err := w.Engine(ctx, host)
		if err != nil {
			return nil, err
		}
		engines[host] = e
	}
	// Sizing (an exec per container) starts first, to overlap all the rest.
	sizes := reconcile.MeasureDeletes(ctx, in, func(host string) engine.VolumeSizer { return engines[host] })
	if in.Tokens, err = w.tokens(ctx, in); err != nil {
		sizes()
		return nil, err
	}
	p, err := reconcile.NewPlan(in)
	if err == nil {
		err = gateErrors(p, unread)
	}
	if err != nil {
		sizes()
		return nil, err
	}
	p.SetVolumeSizes(sizes())
	p.SetMoveSizes(reconcile.MeasureMoves(ctx, in, p, func(host string) engine.VolumeSizer { return engines[host] })())
	return p, nil
}

// tokens are the tokens of the declared boxes that exist: from
// .boxes/secrets, or recovered from the box's containers. Another fleet's
// box is never read: its token is not ours to keep. in is the plan's
// input, but for the tokens.
func (w *Workspace) tokens(ctx context.Context, in reconcile.Input) (map[string]string, error) {
	// The token files, and whether a pool box's executor was made with
	// its file's token, read in parallel: a fleet's plan reads thousands.
	type stored struct {
		exists, kept, made bool
		token              string
		err                error
		r                  engine.Resources
	}
	boxes := w.Config.Boxes
	files := make([]stored, len(boxes))
	par.Each(len(boxes), func(i int) {
		b, f := boxes[i], &files[i]
		o := w.Observed[b.Host]
		if o == nil {
			return
		}
		f.r = o.Of(b.Name)
		if f.r.Empty() || f.r.HeldBy(w.Config.Fleet) != "" {
			return
		}
		f.exists = true
		f.token, f.kept, f.err = w.Tokens.Get(b.Name)
		if b.Pool != "" {
			f.made = f.kept && reconcile.MadeWith(in, b, f.r, f.token)
		}
	})
	tokens := map[string]string{}
	for i, b := range boxes {
		f := files[i]
		if !f.exists {
			continue
		}
		r := f.r
		if b.Pool != "" {
			// A pool box may have been reset from another working
			// directory: the engine's token is the one that counts, and a
			// token file the engine does not back may be a previous
			// holder's. Without one the plan says "token", and the
			// apply mints a new one. A token file the box's executor
			// was made with (its config hash says so) needs no call.
			// A bad token file is no token: the engine's replaces it
			// here, or apply's new one.
			if f.made {
				tokens[b.Name] = f.token
				continue
			}
			if token, _, ok := w.containerToken(ctx, b.Host, r, compose.ExecutorService); ok {
				if f.token != token {
					if err := w.Tokens.Put(b.Name, token); err != nil {
						return nil, err
					}
				}
				tokens[b.Name] = token
			}
			continue
		}
		token, ok, err := f.token, f.kept, f.err
		if err != nil {
			return nil, err
		}
		if !ok {
			token, ok = w.recoverToken(ctx, b, r)
		}
		if ok {
			tokens[b.Name] = token
		}
	}
	return tokens, nil
}

// containerToken is the token in the environment of the first of box r's
// containers of services (on host) that carries one, and that container's
// service.
func (w *Workspace) containerToken(ctx context.Context, host string, r engine.Resources, services ...string) (token, service string, ok bool) {
	e, err := w.Engine(ctx, host)
	if err != nil {
		return "", "", false
	}
	for _, service := range services {
		c, ok := r.Container(service)
		if !ok {
			continue
		}
		env, err := e.ContainerEnv(ctx, c.ID)
		if err != nil {
			continue
		}
		if token, ok := statedir.TokenFromEnv(env); ok && token != compose.Redacted {
			return token, service, true
		}
	}
	return "", "", false
}

// recoverToken is box b's token from its containers, stored again in
// .boxes/secrets, with a warning that it was missing there.
func (w *Workspace) recoverToken(ctx context.Context, b spec.Box, r engine.Resources) (string, bool) {
	token, service, ok := w.containerToken(ctx, b.Host, r, compose.ExecutorService, compose.AgentService)
	if !ok {
		return "", false
	}
	if err := w.Tokens.Put(b.Name, token); err != nil {
		w.opts.Warn("recovered the token of %s but could not store it: %v", b.Name, err)
		return token, true
	}
	w.opts.Warn("the token of %s was missing from .boxes/secrets; recovered it from its %s container", b.Name, service)
	return token, true
}

// observeForPlan observes every host. One that cannot be reached fails the
// plan, unless --target names only declared boxes and none of them is on
// it: then the plan leaves it out, with a warning, so that an engine that
// is down does not stop work on the others.
func (w *Workspace) observeForPlan(ctx context.Context, target []string) error {
	hosts := w.Hosts()
	errs := w.observeEach(ctx, hosts)
	if err := errors.Join(errs...); err == nil {
		return w.distinct(ctx, hosts)
	} else if len(target) == 0 {
		return err
	}
	needed := map[string]bool{}
	for _, n := range target {
		b, ok := w.Config.Box(n)
		if !ok {
			// An undeclared box could be on any host.
			return errors.Join(errs...)
		}
		needed[b.Host] = true
	}
	var fatal []error
	var reached []string
	for i, h := range hosts {
		switch {
		case errs[i] == nil:
			reached = append(reached, h)
		case needed[h]:
			fatal = append(fatal, errs[i])
		default:
			delete(w.Observed, h)
			w.opts.Warn("%s is left out of this plan, which targets no box there: %v", reconcile.HostLabel(h), errs[i])
		}
	}
	if err := errors.Join(fatal...); err != nil {
		return err
	}
	w.Config.Boxes = reconcile.WithPools(w.Config, w.declared, w.Observed)
	return w.distinct(ctx, reached)
}

// imageRef is boxes.lock's reference of the image when it is pinned by
// digest (boxes lock image NAME@sha256:…), which hosts that lack the image
// pull; "" otherwise.
func (w *Workspace) imageRef() string {
	if w.Lock == nil || w.Lock.Image == nil || !reconcile.PinnedByDigest(w.Lock.Image.Ref) {
		return ""
	}
	return w.Lock.Image.Ref
}
