package reconcile

import (
	"context"
	"sort"
	"sync"

	"github.com/hermes-box/boxes/engine"
)

// Sizes maps host → volume name → its size.
type Sizes map[string]map[string]engine.VolumeSize

// MeasureDeletes starts measuring the volumes of every box the plan of in
// deletes (only those: never another fleet's box), every engine in
// parallel, and returns a function that waits for the sizes. Started before
// NewPlan, the measuring overlaps the planning.
func MeasureDeletes(ctx context.Context, in Input, sizer func(host string) engine.VolumeSizer) func() Sizes {
	byHost := map[string][]string{}
	for _, d := range deletions(in) {
		for _, v := range d.r.Volumes {
			byHost[d.host] = append(byHost[d.host], v.Name)
		}
	}
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		sizes = Sizes{}
	)
	for host, vols := range byHost {
		s, o := sizer(host), in.Observed[host]
		if s == nil || o == nil {
			continue
		}
		sort.Strings(vols)
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := s.VolumeSizes(ctx, o, vols)
			mu.Lock()
			sizes[host] = got
			mu.Unlock()
		}()
	}
	return func() Sizes {
		wg.Wait()
		return sizes
	}
}

// SetVolumeSizes writes measured sizes into the plan's deletes.
func (p *Plan) SetVolumeSizes(sizes Sizes) {
	for _, b := range p.Boxes {
		if b.Action != Delete || b.Delete == nil {
			continue
		}
		for j, v := range b.Delete.Volumes {
			got, ok := sizes[b.Host][v.Name]
			switch {
			case !ok:
			case got.Unread != "":
				b.Delete.Volumes[j].Size, b.Delete.Volumes[j].Unread = -1, got.Unread
			default:
				b.Delete.Volumes[j].Size, b.Delete.Volumes[j].Unread = got.Bytes, ""
			}
		}
	}
}
