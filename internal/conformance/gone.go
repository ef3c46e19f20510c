package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
)

// goneBound is how long a call to an engine that went away may take to
// fail: it fails on its own, long before its context's end.
const goneBound = 15 * time.Second

// gone: a call under way when the engine goes away, and every call made
// after, fails with an error matching engine.ErrUnreachable, in bounded time
// and without a panic; the engine left behind is untouched.
func (s *suite) gone(t *testing.T) {
	cs := s.up(t)
	agent := cs[compose.AgentService]
	g, makeGone := s.h.Gone(t)
	t.Cleanup(func() { g.Close() })
	o, err := g.Observe(s.ctx(t))
	if err != nil {
		t.Fatalf("Observe through the engine to make gone, before it is: %v", err)
	}
	if c, ok := o.Of(Box).Container(compose.AgentService); !ok || c.ID != agent.ID {
		t.Fatalf("the engine to make gone does not see %s's agent %.12s: %s", Box, agent.ID, describe(c, ok))
	}

	// Mid-call: an exec whose output echoes its input, under way.
	stdin, feed := io.Pipe()
	t.Cleanup(func() { feed.Close() })
	echoed := newWatch("ping")
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	ctx, cancel := context.WithTimeout(context.Background(), goneBound)
	defer cancel()
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{-1, fmt.Errorf("panic: %v", p)}
			}
		}()
		code, err := g.Exec(ctx, agent.ID, engine.ExecOptions{Cmd: []string{"cat"}, Stdin: stdin, Stdout: echoed, Stderr: io.Discard})
		done <- result{code, err}
	}()
	go func() { _, _ = io.WriteString(feed, "ping\n") }()
	select {
	case <-echoed.seen:
	case r := <-done:
		t.Fatalf("an exec of cat ended before its input did: exit code %d, %v", r.code, r.err)
	case <-time.After(goneBound):
		t.Fatalf("an exec of cat did not echo its input within %s", goneBound)
	}
	makeGone()
	select {
	case r := <-done:
		if !errors.Is(r.err, engine.ErrUnreachable) {
			t.Errorf("the exec under way as the engine went away: exit code %d, error %v; want an error matching engine.ErrUnreachable", r.code, r.err)
		}
	case <-time.After(goneBound + 5*time.Second):
		t.Errorf("the exec under way as the engine went away has not returned after %s", goneBound+5*time.Second)
	}

	// After: every call fails so, and none reaches the engine.
	absent := s.project(t, Absent)
	network, volume := "", compose.VolumeName(Box, compose.AgentVolume)
	for _, n := range s.observe(t).Of(Box).Networks {
		network = n.ID
	}
	tar := tarOf(t, dirEntry("conformance"), fileEntry("conformance/after-gone", []byte("never written\n")))
	calls := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Observe", func(ctx context.Context) error { _, err := g.Observe(ctx, s.h.Image); return err }},
		{"Create", func(ctx context.Context) error { return g.Create(ctx, absent, false) }},
		{"Start", func(ctx context.Context) error { return g.Start(ctx, s.p) }},
		{"Stop", func(ctx context.Context) error { return g.Stop(ctx, s.p.Name) }},
		{"Exec", func(ctx context.Context) error {
			_, err := g.Exec(ctx, agent.ID, engine.ExecOptions{Cmd: []string{"true"}})
			return err
		}},
		{"CopyTo", func(ctx context.Context) error {
			return g.CopyTo(ctx, agent.ID, "/data", strings.NewReader(string(tar)))
		}},
		{"CopyFrom", func(ctx context.Context) error {
			rc, err := g.CopyFrom(ctx, agent.ID, "/data")
			if err == nil {
				_, err = io.Copy(io.Discard, rc)
				rc.Close()
			}
			return err
		}},
		{"ContainerID", func(ctx context.Context) error { _, err := g.ContainerID(ctx, Box, compose.AgentService); return err }},
		{"CreateLeaseMark", func(ctx context.Context) error {
			_, err := g.CreateLeaseMark(ctx, s.h.Image, engine.LeaseMark{Name: compose.LeaseName(Absent, engine.LeaseClaim, 0),
				Box: Absent, Fleet: Fleet, Kind: engine.LeaseClaim, Holder: "nobody", Lease: "never", Expires: time.Now().Add(time.Hour)})
			return err
		}},
		{"RemoveContainer", func(ctx context.Context) error { return g.RemoveContainer(ctx, agent.ID) }},
		{"RemoveNetwork", func(ctx context.Context) error { return g.RemoveNetwork(ctx, network) }},
		{"RemoveVolume", func(ctx context.Context) error { return g.RemoveVolume(ctx, volume) }},
	}
	var wg sync.WaitGroup
	for _, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			returned, err := bounded(c.call)
			switch {
			case !returned:
				t.Errorf("%s on the engine gone has not returned after %s", c.name, goneBound+5*time.Second)
			case !errors.Is(err, engine.ErrUnreachable):
				t.Errorf("%s on the engine gone: %v; want an error matching engine.ErrUnreachable", c.name, err)
			}
		}()
	}
	wg.Wait()

	// The engine left behind was asked nothing of this.
	now := s.states(t, engine.Running, "once another connection to the engine went away")
	for _, svc := range compose.Services {
		if now[svc].ID != cs[svc].ID {
			t.Errorf("the %s container changed (%.12s, was %.12s) through an engine that was gone", svc, now[svc].ID, cs[svc].ID)
		}
	}
	o = s.observe(t)
	for _, m := range o.LeaseMarks {
		if m.Box == Absent {
			t.Errorf("a lease marker was made through an engine that was gone: %+v", m)
		}
	}
	if r := o.Of(Absent); !r.Empty() {
		t.Errorf("%s was made through an engine that was gone: %s", Absent, r.Counts())
	}
	if code, out, _, err := s.run(t, agent.ID, "cat", "/data/conformance/after-gone"); err == nil && code == 0 {
		t.Errorf("a file was copied in through an engine that was gone: %q", out)
	}
}

// bounded runs call with a context of goneBound and reports whether it
// returned a little after that at the latest, and its error; a panic is
// its error.
func bounded(call func(ctx context.Context) error) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), goneBound)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("panic: %v", p)
			}
		}()
		done <- call(ctx)
	}()
	select {
	case err := <-done:
		if ctx.Err() != nil && err != nil {
			return true, fmt.Errorf("%w (only once its context ended)", err)
		}
		return true, err
	case <-time.After(goneBound + 5*time.Second):
		return false, nil
	}
}

// watch is a writer that says when what it was written holds want.
type watch struct {
	mu   sync.Mutex
	buf  strings.Builder
	want string
	seen chan struct{}
	once sync.Once
}

func newWatch(want string) *watch { return &watch{want: want, seen: make(chan struct{})} }

func (w *watch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

// remove: a box's containers, networks and volumes removed through the
// contract are gone from the observation; removing them again is no error.
func (s *suite) remove(t *testing.T) {
	s.up(t)
	r := s.observe(t).Of(Box)
	s.removeResources(t, r, t.Errorf)
	after := s.observe(t)
	if left := after.Of(Box); !left.Empty() {
		t.Errorf("after removing %s's resources, the engine still shows %s", Box, left.Counts())
	}
	for _, c := range r.Containers {
		if after.Unmanaged.Containers[c.Name] {
			t.Errorf("container %s is still there, unlabelled", c.Name)
		}
	}
	for _, v := range r.Volumes {
		if after.Unmanaged.Volumes[v.Name] {
			t.Errorf("volume %s is still there, unlabelled", v.Name)
		}
	}
	for _, n := range r.Networks {
		if after.Unmanaged.Networks[n.Name] {
			t.Errorf("network %s is still there, unlabelled", n.Name)
		}
	}
	// An apply cut short removes again what it removed: no error.
	s.removeResources(t, r, func(format string, args ...any) {
		t.Errorf("removing again what is gone: "+format, args...)
	})
}

// removeResources removes r as an apply's delete does: containers, then
// networks, then volumes; fail reports each error.
func (s *suite) removeResources(t *testing.T, r engine.Resources, fail func(string, ...any)) {
	ctx := s.ctx(t)
	for _, c := range r.Containers {
		if err := s.e.RemoveContainer(ctx, c.ID); err != nil {
			fail("RemoveContainer %s: %v", c.Name, err)
		}
	}
	for _, n := range r.Networks {
		if err := s.e.RemoveNetwork(ctx, n.ID); err != nil {
			fail("RemoveNetwork %s: %v", n.Name, err)
		}
	}
	for _, v := range r.Volumes {
		if err := s.e.RemoveVolume(ctx, v.Name); err != nil {
			fail("RemoveVolume %s: %v", v.Name, err)
		}
	}
}

// removeAll removes, through the contract, whatever the suite's boxes have
// left: their resources and lease markers.
func (s *suite) removeAll(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), s.h.callTimeout())
	defer cancel()
	o, err := s.e.Observe(ctx)
	if err != nil {
		t.Logf("conformance cleanup: %v", err)
		return
	}
	for _, m := range o.LeaseMarks {
		for _, b := range Boxes {
			if m.Box == b {
				if err := s.e.RemoveContainer(ctx, m.ID); err != nil {
					t.Logf("conformance cleanup: lease marker %s: %v", m.Name, err)
				}
			}
		}
	}
	for _, b := range Boxes {
		s.removeResources(t, o.Of(b), t.Logf)
	}
}
