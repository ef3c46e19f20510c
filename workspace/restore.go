package workspace

import (
	"context"
	"errors"

	"filippo.io/age"

	"github.com/hermes-box/boxes/apply"
	"github.com/hermes-box/boxes/backup"
	"github.com/hermes-box/boxes/reconcile"
)

// errNoIdentities is a plan that restores an archive with no way to decrypt it.
var errNoIdentities = errors.New("no identities to decrypt the archive")

// restores checks every restore archive of p whole, before anything
// changes, and is the seeder that restores them, its steps shown on pr;
// nil when p restores none.
func (w *Workspace) restores(ctx context.Context, p *reconcile.Plan, o ApplyOptions, pr apply.Progress) (*backup.Seeder, error) {
	identities := o.Identities
	if identities == nil {
		identities = func(string) ([]age.Identity, error) { return nil, errNoIdentities }
	}
	ids, checked, err := backup.CheckRestores(ctx, p, w.Dir(), identities, w.opts.Shown)
	if err != nil || ids == nil {
		return nil, err
	}
	for _, c := range checked {
		if o.Checked != nil {
			o.Checked(c)
		}
		if c.Manifest.Image != "" && c.Manifest.Image != p.Image {
			w.opts.Warn("%s was saved from image %s; box %s gets boxes.lock's %s", w.opts.Shown(c.Archive), reconcile.ShortID(c.Manifest.Image), c.Box, reconcile.ShortID(p.Image))
		}
	}
	return &backup.Seeder{Dir: w.Dir(), Identities: ids, Hosts: hosts{w}, Sizes: backup.Bounds(checked), Step: pr.Step}, nil
}
