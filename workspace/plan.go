package workspace

import (
	"context"
	"fmt"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
)

// Plan observes every host and decides. It reads the tokens of existing
// boxes, recovering a lost one from the box's containers (with a warning).
func (w *Workspace) Plan(ctx context.Context, opts reconcile.PlanOptions) (*reconcile.Plan, error) {
	for _, n := range opts.Replace {
		if _, ok := w.Config.Box(n); !ok {
			return nil, fmt.Errorf("--replace %s: %w", n, w.Undeclared(n))
		}
	}
	if err := w.Observe(ctx); err != nil {
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
		Observed: w.Observed,
		Tokens:   map[string]string{},
		Replace:  map[string]bool{},
		Target:   map[string]bool{},
		Backups:  w.Backups(),
	}
	for _, n := range opts.Replace {
		in.Replace[n] = true
	}
	for _, n := range opts.Target {
		in.Target[n] = true
	}
	engines := map[string]reconcile.VolumeSizer{}
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
	sizes := reconcile.MeasureDeletes(ctx, in, func(host string) reconcile.VolumeSizer { return engines[host] })
	for _, b := range w.Config.Boxes {
		o := w.Observed[b.Host]
		if o == nil {
			continue
		}
		r := o.Of(b.Name)
		// Another fleet's box is never read: its token is not ours to keep.
		if r.Empty() || r.HeldBy(w.Config.Fleet) != "" {
			continue
		}
		token, ok, err := w.Tokens.Get(b.Name)
		if err != nil {
			sizes()
			return nil, err
		}
		if !ok {
			token, ok = w.recoverToken(ctx, b, r)
		}
		if ok {
			in.Tokens[b.Name] = token
		}
	}
	p, err := reconcile.NewPlan(in)
	if err != nil {
		sizes()
		return nil, err
	}
	p.SetVolumeSizes(sizes())
	return p, nil
}

func (w *Workspace) recoverToken(ctx context.Context, b spec.Box, r reconcile.Resources) (string, bool) {
	e, err := w.Engine(ctx, b.Host)
	if err != nil {
		return "", false
	}
	for _, service := range []string{compose.ExecutorService, compose.AgentService} {
		c, ok := r.Container(service)
		if !ok {
			continue
		}
		env, err := e.ContainerEnv(ctx, c.ID)
		if err != nil {
			continue
		}
		token, ok := reconcile.TokenFromEnv(env)
		if !ok || token == compose.Redacted {
			continue
		}
		if err := w.Tokens.Put(b.Name, token); err != nil {
			w.opts.Warn("recovered the token of %s but could not store it: %v", b.Name, err)
			return token, true
		}
		w.opts.Warn("the token of %s was missing from .boxes/secrets; recovered it from its %s container", b.Name, service)
		return token, true
	}
	return "", false
}
