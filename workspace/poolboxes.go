package workspace

import (
	"sort"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/spec"
)

// poolBoxes are p's ready free boxes as last observed, the lowest numbers
// first, and the counts of the others for a lease that finds none. A box
// in lost counts as leased: the engine refused its claim.
func (w *Workspace) poolBoxes(p spec.Pool, lost map[string]bool) ([]string, *NoFreeBoxError) {
	obs := w.Observed[p.Host]
	leases := obs.Leases(w.Config.Fleet)
	none := &NoFreeBoxError{Pool: p.Name, Size: p.Size}
	var ready []string
	for _, b := range w.Config.Boxes {
		if b.Pool != p.Name {
			continue
		}
		switch r := obs.Of(b.Name); {
		case leases[b.Name].Held() || lost[b.Name]:
			none.Leased++
		case r.Empty():
			none.Absent++
		case !poolBoxReady(r):
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

// poolBoxReady reports whether a pool box's containers all run: apply made
// it and waited for it, and nothing has stopped it since.
func poolBoxReady(r engine.Resources) bool {
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
