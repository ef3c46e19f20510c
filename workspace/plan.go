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
	in := reconcile.Input{
		Config:      w.Config,
		Image:       w.Image(),
		Observed:    w.Observed,
		Tokens:      map[string]string{},
		Replace:     map[string]bool{},
		Target:      map[string]bool{},
		VolumeSizes: map[string]map[string]int64{},
		Backups:     w.Backups(),
	}
	for _, n := range opts.Replace {
		in.Replace[n] = true
	}
	for _, n := range opts.Target {
		in.Target[n] = true
	}
	declared := map[string]bool{}
	for _, b := range w.Config.Boxes {
		declared[b.Name] = true
		o := w.Observed[b.Host]
		if o == nil {
			continue
		}
		r := o.Of(b.Name)
		if r.Empty() {
			continue
		}
		token, ok, err := w.Tokens.Get(b.Name)
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
	for _, host := range w.Hosts() {
		o := w.Observed[host]
		if o == nil {
			continue
		}
		for _, name := range o.Boxes() {
			// Sizes are for the plan's deletes: an undeclared box outside
			// --target is not one of them.
			if declared[name] || (len(in.Target) > 0 && !in.Target[name]) {
				continue
			}
			if _, done := in.VolumeSizes[host]; done {
				continue
			}
			e, err := w.Engine(ctx, host)
			if err != nil {
				return nil, err
			}
			sizes, err := e.VolumeSizes(ctx)
			if err != nil {
				w.opts.Warn("%v", err)
				sizes = map[string]int64{}
			}
			in.VolumeSizes[host] = sizes
		}
	}
	return reconcile.NewPlan(in)
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
