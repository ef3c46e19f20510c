package workspace

import (
	"context"
	"sort"
	"time"

	"github.com/hermes-box/boxes/pool"
	"github.com/hermes-box/boxes/reconcile"
)

// Leases lists the boxes of every pool with their leases, and every other
// pool box of the fleet the engines hold: leased ones of pools boxes.yaml
// no longer has, and free ones a plan deletes ("to delete"); with reap, it
// first resets the reapable leases (see pool.Reapable).
func (w *Workspace) Leases(ctx context.Context, reap bool, o LeaseOptions) ([]pool.LeaseRow, error) {
	if err := w.Observe(ctx); err != nil {
		return nil, err
	}
	if reap {
		if _, err := w.reap(ctx, o); err != nil {
			return nil, err
		}
		if err := w.Observe(ctx); err != nil {
			return nil, err
		}
	}
	rows := []pool.LeaseRow{}
	now := time.Now()
	listed := map[[2]string]bool{}
	for _, b := range w.Config.Boxes {
		if b.Pool == "" {
			continue
		}
		l := w.Observed[b.Host].Leases(w.Config.Fleet)[b.Name]
		l.Box, l.Pool = b.Name, b.Pool
		rows = append(rows, pool.BoxRow(b.Host, l, w.Observed[b.Host].Of(b.Name), now))
		listed[[2]string{b.Host, b.Name}] = true
	}
	// The pool boxes boxes.yaml no longer counts, by their label: the
	// leased ones are kept for their holders; the free ones (beyond a
	// smaller size, or of a pool taken out or moved) a plan deletes, and
	// they stay until an apply's delete is confirmed.
	for _, host := range w.Hosts() {
		o := w.Observed[host]
		if o == nil {
			continue
		}
		leases := o.Leases(w.Config.Fleet)
		for name, l := range leases {
			if !listed[[2]string{host, name}] {
				l.Box = name
				rows = append(rows, pool.RowOf(host, l, now))
				listed[[2]string{host, name}] = true
			}
		}
		for _, name := range o.Boxes() {
			r := o.Of(name)
			if owner := reconcile.PoolOf(r); owner != "" && !listed[[2]string{host, name}] && r.Owned(w.Config.Fleet) && r.HeldBy(w.Config.Fleet) == "" {
				rows = append(rows, pool.LeaseRow{Box: name, Pool: owner, Host: host, State: "to delete"})
			}
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Box < rows[j].Box })
	return rows, nil
}

// HasLeases reports whether any host observed holds lease markers of this
// fleet.
func (w *Workspace) HasLeases() bool {
	for _, o := range w.Observed {
		if o != nil && len(o.Leases(w.Config.Fleet)) > 0 {
			return true
		}
	}
	return false
}
