package pool

import (
	"sort"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/spec"
)

// FreeBoxes are the boxes of pool p, among boxes (of fleet), that a lease may
// claim on obs, p's host as last observed: those no mark holds and whose
// containers all run (BoxReady), the lowest numbers first. The others are
// counted in the NoFreeBoxError a lease that finds none returns. A box in
// lost counts as leased: the engine refused its claim, another's being
// made first, though obs may not list that claim yet.
func FreeBoxes(fleet string, boxes []spec.Box, p spec.Pool, obs *engine.Observed, lost map[string]bool) ([]string, *NoFreeBoxError) {
	leases := obs.Leases(fleet)
	none := &NoFreeBoxError{Pool: p.Name, Size: p.Size}
	var ready []string
	for _, b := range boxes {
		if b.Pool != p.Name {
			continue
		}
		switch r := obs.Of(b.Name); {
		case leases[b.Name].Held() || lost[b.Name]:
			none.Leased++
		case r.Empty():
			none.Absent++
		case !BoxReady(r):
			none.Unready++
		default:
			ready = append(ready, b.Name)
		}
	}
	// The lowest numbers first, as people count.
	sort.Slice(ready, func(i, j int) bool {
		a, _ := spec.PoolBoxNumber(p.Name, ready[i])
		b, _ := spec.PoolBoxNumber(p.Name, ready[j])
		return a < b
	})
	return ready, none
}

// BoxReady reports whether a pool box's containers all run: apply made it
// and waited for it, and nothing has stopped it since. Only such a box is
// leased: its holder gets a box to work in at once.
func BoxReady(r engine.Resources) bool {
	if _, ok := r.Container(compose.AgentService); !ok {
		return false
	}
	if _, ok := r.Container(compose.ExecutorService); !ok {
		return false
	}
	for _, c := range r.Containers {
		if c.State != engine.Running || c.Health == engine.Unhealthy {
			return false
		}
	}
	return true
}
