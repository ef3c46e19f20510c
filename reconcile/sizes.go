package reconcile

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
)

// VolumeSize is a measured volume: Bytes, or why it could not be read.
type VolumeSize struct {
	Bytes  int64
	Unread string
}

// VolumeSizer measures volumes on one engine, from inside the containers of
// the snapshot that mount them: from what the box reported of its own, and
// with du only when du is set.
type VolumeSizer interface {
	VolumeSizes(ctx context.Context, o *Observed, volumes []string, du bool) map[string]VolumeSize
}

// Sizes maps host → volume name → its size.
type Sizes map[string]map[string]VolumeSize

// Measuring waits for the sizes being measured: at most budget (none: until
// they are all in). A host whose sizes are not in by then has each of its
// volumes reported unread, saying so; its measuring is cancelled.
type Measuring func(budget time.Duration) Sizes

// MeasureDeletes starts measuring the volumes of every box the plan of in
// deletes (only those: never another fleet's box), every engine in
// parallel. Started before NewPlan, the measuring overlaps the planning.
// du measures the volumes whose box has not reported their size (see
// VolumeSizer): apply's choice, not plan's, whose cost must not depend on
// how fast the engine starts a process in a container.
func MeasureDeletes(ctx context.Context, in Input, sizer func(host string) VolumeSizer, du bool) Measuring {
	byHost := map[string][]string{}
	for _, d := range deletions(in) {
		for _, v := range d.r.Volumes {
			byHost[d.host] = append(byHost[d.host], v.Name)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
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
			got := s.VolumeSizes(ctx, o, vols, du)
			mu.Lock()
			sizes[host] = got
			mu.Unlock()
		}()
	}
	all := make(chan struct{})
	go func() {
		wg.Wait()
		close(all)
	}()
	return func(budget time.Duration) Sizes {
		defer cancel()
		if budget > 0 {
			select {
			case <-all:
			case <-time.After(budget):
			}
		} else {
			<-all
		}
		mu.Lock()
		defer mu.Unlock()
		out := Sizes{}
		for host, vols := range byHost {
			if got, ok := sizes[host]; ok {
				out[host] = got
				continue
			}
			if sizer(host) == nil || in.Observed[host] == nil {
				continue
			}
			why := fmt.Sprintf("not measured within the %s a plan gives it; boxes apply waits for it", budget.Round(time.Millisecond))
			out[host] = map[string]VolumeSize{}
			for _, v := range vols {
				out[host][v] = VolumeSize{Unread: why}
			}
		}
		return out
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
