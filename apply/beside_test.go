package apply_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes-box/boxes/apply"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
)

// besideEngine is fakeEngine that journals when a wait for hb init begins
// ("wait init") and counts the waits still running; with needInit, its
// executor answers only once hb init is being waited for, else after 50 ms
// (time enough for a wait begun beside it to show).
type besideEngine struct {
	*fakeEngine
	needInit bool
	initing  chan struct{}
	once     sync.Once
	running  atomic.Int32
}

func (e *besideEngine) WaitInit(ctx context.Context, box string) error {
	e.running.Add(1)
	defer e.running.Add(-1)
	e.j.add(box, "wait init")
	e.once.Do(func() { close(e.initing) })
	return e.fakeEngine.WaitInit(ctx, box)
}

func (e *besideEngine) WaitReady(ctx context.Context, box, token string) (string, error) {
	if e.needInit {
		select {
		case <-e.initing:
		case <-time.After(5 * time.Second):
			return "", errors.New("hb init is not waited for beside the executor")
		}
	} else {
		time.Sleep(50 * time.Millisecond)
	}
	return e.fakeEngine.WaitReady(ctx, box, token)
}

func newBeside(t *testing.T, needInit bool, boxes ...spec.Box) (*apply.Applier, *besideEngine, *journal) {
	a, j, f := newApplier(t, boxes...)
	e := &besideEngine{fakeEngine: f, needInit: needInit, initing: make(chan struct{})}
	a.Engines = map[string]engine.Lifecycle{"": e}
	a.Thawer = fakeThawer{j}
	return a, e, j
}

// A new box's hb init and gate are waited for beside its executor, not
// after it: the executor here answers only once they are.
func TestApplierWaitsForInitBesideExecutor(t *testing.T) {
	a, _, j := newBeside(t, true, testBox("alpha"))
	if err := a.Apply(context.Background(), &reconcile.Plan{Image: testImage, Boxes: []reconcile.BoxPlan{{Name: "alpha", Action: reconcile.Create}}}); err != nil {
		t.Fatal(err)
	}
	got := j.of("alpha")
	if i := slices.Index(got, "wait init"); i < 0 || i > slices.Index(got, "ready") {
		t.Errorf("steps %q: hb init not waited for before the executor answered", got)
	}
	if got[len(got)-2] != "init" || got[len(got)-1] != "done" {
		t.Errorf("steps %q: the box is done before its hb init", got)
	}
}

// A box whose agent must first be resumed (seeded from an archive, or
// frozen by a save that died) has hb init waited for only after its
// executor answered and it was resumed.
func TestApplierWaitsForInitAfterResume(t *testing.T) {
	a, _, j := newBeside(t, false, testBox("alpha"), testBox("beta"))
	if err := a.Tokens.Put("beta", testToken); err != nil {
		t.Fatal(err)
	}
	p := &reconcile.Plan{Image: testImage, Boxes: []reconcile.BoxPlan{
		{Name: "alpha", Action: reconcile.Create, Restore: "/a.tar.zst.age"},
		{Name: "beta", Action: reconcile.Start, Reasons: []reconcile.Reason{{Kind: "frozen"}}},
	}}
	if err := a.Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"alpha": "ready finish wait init init done", "beta": "ready thaw wait init init done"}
	for box, tail := range want {
		got := j.of(box)
		if !strings.HasSuffix(strings.Join(got, " "), tail) {
			t.Errorf("%s: steps %q, want them to end %q", box, got, tail)
		}
	}
}

// An executor that never answers fails the box with its own error, and
// the wait for hb init beside it is ended before the apply returns.
func TestApplierEndsInitWaitWhenExecutorFails(t *testing.T) {
	a, e, j := newBeside(t, true, testBox("alpha"))
	e.fail["alpha"] = "ready"
	err := a.Apply(context.Background(), &reconcile.Plan{Image: testImage, Boxes: []reconcile.BoxPlan{{Name: "alpha", Action: reconcile.Create}}})
	if err == nil || !strings.Contains(err.Error(), "ready failed") {
		t.Fatalf("err = %v, want the executor's failure", err)
	}
	if n := e.running.Load(); n != 0 {
		t.Errorf("%d waits for hb init still run after the apply returned", n)
	}
	if slices.Contains(j.of("alpha"), "init") {
		t.Errorf("steps %q: hb init found ready without an executor", j.of("alpha"))
	}
}
