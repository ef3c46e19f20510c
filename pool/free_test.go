package pool

import (
	"reflect"
	"testing"
	"time"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/spec"
)

func TestFreeBoxes(t *testing.T) {
	p := spec.Pool{Name: "scratch", Size: 3}
	other := spec.Pool{Name: "big", Size: 1}
	cfg := &spec.Config{Fleet: "f", Pools: []spec.Pool{other, p}}
	for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10} {
		cfg.Boxes = append(cfg.Boxes, p.PoolBox(spec.PoolBoxName(p.Name, n), cfg.Fleet))
	}
	cfg.Boxes = append(cfg.Boxes, other.PoolBox("big-1", cfg.Fleet), spec.Box{Name: "scratch-pad", Fleet: "f"})

	obs := &engine.Observed{}
	add := func(r engine.Resources) { obs.Containers = append(obs.Containers, r.Containers...) }
	mark := func(m engine.LeaseMark) {
		m.Fleet = "f"
		obs.LeaseMarks = append(obs.LeaseMarks, m)
	}
	// Ready: 10, 9, 2 (listed out of order), and the other pool's, and a
	// box of no pool.
	for _, name := range []string{"scratch-10", "scratch-9", "scratch-2", "big-1", "scratch-pad"} {
		add(running(name, engine.Healthy))
	}
	// Not running: 3 stopped, 4 unhealthy, 5 without its executor.
	stopped := running("scratch-3", engine.NoHealth)
	stopped.Containers[2].State = engine.Exited
	add(stopped)
	add(running("scratch-4", engine.Unhealthy))
	add(engine.Resources{Containers: running("scratch-5", engine.Healthy).Containers[:1]})
	// Leased: 6 claimed; 7 being reset, its containers still there; 8
	// with a renewal left. Held by another fleet's mark: none of this one's.
	for _, name := range []string{"scratch-6", "scratch-7", "scratch-8"} {
		add(running(name, engine.Healthy))
	}
	mark(*claim("scratch-6", "a", t0.Add(time.Hour)))
	mark(*reset("scratch-7", "1@m", t0))
	mark(renewal("scratch-8", "b", t0.Add(time.Hour)))
	obs.LeaseMarks = append(obs.LeaseMarks, engine.LeaseMark{Box: "scratch-2", Fleet: "g", Kind: engine.LeaseClaim, Lease: "c"})
	// scratch-1 is not made yet.

	ready, none := FreeBoxes(cfg.Fleet, cfg.Boxes, p, obs, nil)
	if want := []string{"scratch-2", "scratch-9", "scratch-10"}; !reflect.DeepEqual(ready, want) {
		t.Errorf("ready %v, want %v (lowest numbers first)", ready, want)
	}
	if want := (NoFreeBoxError{Pool: "scratch", Size: 3, Leased: 3, Unready: 3, Absent: 1}); *none != want {
		t.Errorf("counts %+v, want %+v", *none, want)
	}

	// A box whose claim the engine refused counts as leased, though no
	// claim of it is observed yet.
	ready, none = FreeBoxes(cfg.Fleet, cfg.Boxes, p, obs, map[string]bool{"scratch-2": true, "scratch-10": true})
	if want := []string{"scratch-9"}; !reflect.DeepEqual(ready, want) {
		t.Errorf("with two lost: ready %v, want %v", ready, want)
	}
	if none.Leased != 5 {
		t.Errorf("with two lost: %d leased, want 5", none.Leased)
	}

	// Nothing observed: every box not made yet.
	ready, none = FreeBoxes(cfg.Fleet, cfg.Boxes, p, &engine.Observed{}, nil)
	if len(ready) != 0 || none.Absent != 10 || none.Leased+none.Unready != 0 {
		t.Errorf("on an empty engine: %v %+v", ready, *none)
	}
}

func TestBoxReady(t *testing.T) {
	const box = "scratch-1"
	without := func(service string) engine.Resources {
		r := running(box, engine.Healthy)
		var kept []engine.Container
		for _, c := range r.Containers {
			if c.Service != service {
				kept = append(kept, c)
			}
		}
		r.Containers = kept
		return r
	}
	paused := running(box, engine.NoHealth)
	paused.Containers[0].State = engine.Paused
	for _, tc := range []struct {
		name  string
		r     engine.Resources
		ready bool
	}{
		{"all running, healthy", running(box, engine.Healthy), true},
		{"all running, no healthcheck", running(box, engine.NoHealth), true},
		{"all running, starting", running(box, engine.HealthStarting), true},
		{"unhealthy", running(box, engine.Unhealthy), false},
		{"agent paused", paused, false},
		{"no agent", without(compose.AgentService), false},
		{"no executor", without(compose.ExecutorService), false},
		{"nothing", engine.Resources{}, false},
	} {
		if got := BoxReady(tc.r); got != tc.ready {
			t.Errorf("%s: BoxReady = %v, want %v", tc.name, got, tc.ready)
		}
	}
}
