package reconcile

import (
	"context"
	"sort"
	"sync"
)

// VolumeSize is a measured volume: Bytes, or why it could not be read.
type VolumeSize struct {
	Bytes  int64
	Unread string
}

// VolumeSizer measures volumes on one engine, from inside the containers of
// the snapshot that mount them.
type VolumeSizer interface {
	VolumeSizes(ctx context.Context, o *Observed, volumes []string) map[string]VolumeSize
}

// MeasureDeletes fills in the size of every volume the plan deletes, one
// engine at a time in parallel, so a person sees what data goes. Only the
// plan's own deletes are measured: never another fleet's box.
func (p *Plan) MeasureDeletes(ctx context.Context, observed map[string]*Observed, sizer func(host string) VolumeSizer) {
	byHost := map[string][]string{}
	for _, b := range p.Boxes {
		if b.Action != Delete || b.Delete == nil {
			continue
		}
		for _, v := range b.Delete.Volumes {
			byHost[b.Host] = append(byHost[b.Host], v.Name)
		}
	}
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		sizes = map[string]map[string]VolumeSize{}
	)
	for host, vols := range byHost {
		s, o := sizer(host), observed[host]
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
	wg.Wait()
	for _, b := range p.Boxes {
		if b.Action != Delete || b.Delete == nil {
			continue
		}
		for j, v := range b.Delete.Volumes {
			if got, ok := sizes[b.Host][v.Name]; ok {
				if got.Unread != "" {
					b.Delete.Volumes[j].Size, b.Delete.Volumes[j].Unread = -1, got.Unread
				} else {
					b.Delete.Volumes[j].Size, b.Delete.Volumes[j].Unread = got.Bytes, ""
				}
			}
		}
	}
}
