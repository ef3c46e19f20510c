package reconcile

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/spec"
)

// PoolPlan is what a plan does to one pool: the free boxes it makes, those
// beyond the pool's size it deletes (as it deletes any box no longer
// declared), and how many are free once it is applied.
type PoolPlan struct {
	Name string `json:"name"`
	Host string `json:"host"`
	// Size is how many free boxes the pool keeps ready (its size:).
	Size int `json:"size"`
	// Free are the pool's boxes there now that the plan keeps.
	Free int `json:"free"`
	// Leased are the pool's boxes leased (or being reset) now.
	Leased int `json:"leased"`
	// Create and Delete name the pool's boxes the plan makes and deletes.
	Create []string `json:"create"`
	Delete []string `json:"delete"`
	// Held are the leased boxes a change waits for: each with its reasons.
	Held []HeldBox `json:"held,omitempty"`
}

// HeldBox is a leased box whose change waits for its release.
type HeldBox struct {
	Box     string   `json:"box"`
	Reasons []string `json:"reasons"`
}

// PoolOf is the pool the resources' boxes.pool label names: the pool that
// made the box, whether boxes.yaml still has it or not; "" for a box of no
// pool.
func PoolOf(r engine.Resources) string {
	for _, c := range r.Containers {
		if p := c.Labels[compose.PoolLabel]; p != "" {
			return p
		}
	}
	for _, v := range r.Volumes {
		if p := v.Labels[compose.PoolLabel]; p != "" {
			return p
		}
	}
	for _, n := range r.Networks {
		if p := n.Labels[compose.PoolLabel]; p != "" {
			return p
		}
	}
	return ""
}

// leased reports whether pool box b is leased or being reset.
func leased(in Input, b spec.Box) bool {
	o := in.Observed[b.Host]
	return b.Pool != "" && o != nil && o.Leases(in.Config.Fleet)[b.Name].Held()
}

// String is the pool's line in a plan.
func (pp PoolPlan) String() string {
	parts := []string{fmt.Sprintf("%d to create", len(pp.Create))}
	if len(pp.Delete) > 0 {
		parts = append(parts, fmt.Sprintf("%d beyond its size to delete", len(pp.Delete)))
	}
	parts = append(parts, fmt.Sprintf("%d free wanted", pp.Size), fmt.Sprintf("%d free", pp.Free), fmt.Sprintf("%d leased", pp.Leased))
	line := fmt.Sprintf("pool %s: %s", pp.Name, strings.Join(parts, ", "))
	if pp.Host != "" {
		line += " (host " + pp.Host + ")"
	}
	for _, h := range pp.Held {
		line += fmt.Sprintf("\n    %s is leased: its change waits for its release (%s)", h.Box, strings.Join(h.Reasons, "; "))
	}
	return line
}

// WithPools is declared, the boxes boxes.yaml names, with the boxes of
// cfg's pools as observed: each pool keeps its leased boxes, and the free
// boxes of its fleet it has on its host, lowest numbers first, up to its
// size, and is given new boxes (the lowest numbers no box of any host has,
// nor any lease marker) for the rest. Its free boxes beyond its size are
// left out, so a plan deletes them as it deletes any box no longer
// declared. A pool whose host was not observed adds none.
func WithPools(cfg *spec.Config, declared []spec.Box, observed map[string]*engine.Observed) []spec.Box {
	out := append([]spec.Box(nil), declared...)
	if len(cfg.Pools) == 0 {
		return out
	}
	taken := map[string]bool{}
	for _, b := range declared {
		taken[b.Name] = true
	}
	for _, o := range observed {
		for _, name := range o.Boxes() {
			taken[name] = true
		}
	}
	for _, p := range cfg.Pools {
		o := observed[p.Host]
		if o == nil {
			continue
		}
		leases := o.Leases(cfg.Fleet)
		for name := range leases {
			taken[name] = true // a box being reset is not made again before it is gone
		}
		var have []int
		for _, name := range o.Boxes() {
			n, ok := spec.PoolBoxNumber(p.Name, name)
			switch {
			case !ok || !o.Of(name).Owned(cfg.Fleet):
			case leases[name].Held():
				// Leased: kept, and not one of the free boxes.
				out = append(out, p.PoolBox(name, cfg.Fleet))
			default:
				have = append(have, n)
			}
		}
		sort.Ints(have)
		if len(have) > p.Size {
			have = have[:p.Size]
		}
		for _, n := range have {
			out = append(out, p.PoolBox(spec.PoolBoxName(p.Name, n), cfg.Fleet))
		}
		for n := 1; len(have) < p.Size; n++ {
			name := spec.PoolBoxName(p.Name, n)
			if _, ok := spec.PoolBoxNumber(p.Name, name); !ok {
				break // the pool's numbers are all taken
			}
			if taken[name] {
				continue
			}
			taken[name] = true
			have = append(have, n)
			out = append(out, p.PoolBox(name, cfg.Fleet))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// poolPlans are the lines of in's pools in plan p.
func poolPlans(in Input, p *Plan) []PoolPlan {
	cfg := in.Config
	var out []PoolPlan
	for _, pool := range cfg.Pools {
		pp := PoolPlan{Name: pool.Name, Host: pool.Host, Size: pool.Size, Create: []string{}, Delete: []string{}}
		for _, b := range p.Boxes {
			if _, ok := spec.PoolBoxNumber(pool.Name, b.Name); !ok {
				continue
			}
			switch b.Action {
			case Create:
				pp.Create = append(pp.Create, b.Name)
			case Delete:
				pp.Delete = append(pp.Delete, b.Name)
			default:
				b0, _ := cfg.Box(b.Name)
				switch {
				case b.Host != pool.Host:
				case leased(in, b0):
					pp.Leased++
					if len(b.Held) > 0 {
						h := HeldBox{Box: b.Name}
						for _, r := range b.Held {
							h.Reasons = append(h.Reasons, r.String())
						}
						pp.Held = append(pp.Held, h)
					}
				default:
					pp.Free++
				}
			}
		}
		out = append(out, pp)
	}
	return out
}

// leasedKept are the leased boxes of in's fleet that boxes.yaml does not
// declare, on any host observed, by name.
func leasedKept(in Input) []string {
	declared := map[[2]string]bool{}
	for _, b := range in.Config.Boxes {
		declared[[2]string{b.Host, b.Name}] = true
	}
	var out []string
	for host, o := range in.Observed {
		for name, l := range o.Leases(in.Config.Fleet) {
			if l.Held() && !declared[[2]string{host, name}] && !o.Of(name).Empty() {
				out = append(out, name)
			}
		}
	}
	sort.Strings(out)
	return out
}
