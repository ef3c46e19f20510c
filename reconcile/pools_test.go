package reconcile

import (
	"slices"
	"testing"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/spec"
)

// on is an engine holding a volume of each box, of fleet by name.
func on(host string, fleetOf map[string]string) *engine.Observed {
	o := &engine.Observed{Host: host}
	for box, fleet := range fleetOf {
		o.Volumes = append(o.Volumes, engine.Volume{Name: "hbl-" + box + "_agent-data", Box: box, Fleet: fleet})
	}
	return o
}

func TestWithPools(t *testing.T) {
	cfg := &spec.Config{Fleet: "main", Pools: []spec.Pool{
		{Name: "p", Size: 3},
		{Name: "far", Size: 1, Host: "far"},
	}}
	declared := []spec.Box{{Name: "alpha", Fleet: "main"}}
	cases := []struct {
		name     string
		observed map[string]*engine.Observed
		want     []string
	}{
		{"nothing yet", map[string]*engine.Observed{"": on("", nil)}, []string{"alpha", "p-1", "p-2", "p-3"}},
		{"kept, and a new one in the first gap", map[string]*engine.Observed{"": on("", map[string]string{"p-2": "main", "p-7": "main"})},
			[]string{"alpha", "p-1", "p-2", "p-7"}},
		{"beyond the size, the highest numbers are left out", map[string]*engine.Observed{"": on("", map[string]string{"p-1": "main", "p-2": "main", "p-5": "main", "p-9": "main"})},
			[]string{"alpha", "p-1", "p-2", "p-5"}},
		{"another fleet's box is not the pool's, and its name is skipped", map[string]*engine.Observed{"": on("", map[string]string{"p-1": "other"})},
			[]string{"alpha", "p-2", "p-3", "p-4"}},
		{"a name held on another host is skipped", map[string]*engine.Observed{"": on("", nil), "far": on("far", map[string]string{"p-1": "main"})},
			[]string{"alpha", "far-1", "p-2", "p-3", "p-4"}},
		{"a box named like the pool's but not one of its numbers is not the pool's", map[string]*engine.Observed{"": on("", map[string]string{"p-01": "main", "p-x": "main"})},
			[]string{"alpha", "p-1", "p-2", "p-3"}},
		{"no host observed, no pool box", map[string]*engine.Observed{}, []string{"alpha"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			boxes := WithPools(cfg, declared, tc.observed)
			var got []string
			for _, b := range boxes {
				got = append(got, b.Name)
				if pool, ok := cfg.PoolOf(b.Name); ok && (b.Pool != pool.Name || b.Host != pool.Host || b.Fleet != "main") {
					t.Errorf("box %s = %+v, want pool %s's on host %q", b.Name, b, pool.Name, pool.Host)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("boxes %v, want %v", got, tc.want)
			}
		})
	}
	if len(declared) != 1 {
		t.Errorf("WithPools changed the declared boxes: %v", declared)
	}
}

func TestPoolPlans(t *testing.T) {
	cfg := &spec.Config{Fleet: "main", Pools: []spec.Pool{{Name: "p", Size: 2}}}
	p := &Plan{Boxes: []BoxPlan{
		{Name: "alpha", Action: Create},
		{Name: "p-1", Action: NoOp},
		{Name: "p-2", Action: Create},
		{Name: "p-3", Action: Delete},
	}}
	got := poolPlans(Input{Config: cfg, Observed: map[string]*engine.Observed{}}, p)
	want := PoolPlan{Name: "p", Size: 2, Free: 1, Create: []string{"p-2"}, Delete: []string{"p-3"}}
	if len(got) != 1 || got[0].String() != want.String() || !slices.Equal(got[0].Create, want.Create) || !slices.Equal(got[0].Delete, want.Delete) {
		t.Fatalf("poolPlans = %+v, want %+v", got, want)
	}
	if s := got[0].String(); s != "pool p: 1 to create, 1 beyond its size to delete, 2 free wanted, 1 free, 0 leased" {
		t.Errorf("line %q", s)
	}
}
