package apply_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/hermes-box/boxes/apply"
	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/statedir"
)

// journal records every step of every box, in order per box and overall.
type journal struct {
	mu    sync.Mutex
	steps map[string][]string
	all   []string // "box: step"
}

func (j *journal) add(box, step string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.steps == nil {
		j.steps = map[string][]string{}
	}
	j.steps[box] = append(j.steps[box], step)
	j.all = append(j.all, box+": "+step)
}

// at is the position of box's step in the overall order, -1 if absent.
func (j *journal) at(box, step string) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	for i, s := range j.all {
		if s == box+": "+step {
			return i
		}
	}
	return -1
}

func (j *journal) of(box string) []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.steps[box]
}

// fakeEngine is an engine that does nothing but say what it was asked, and
// remember which image each box's containers run.
type fakeEngine struct {
	j      *journal
	tokens statedir.Tokens
	fail   map[string]string // box → the step that fails
	mu     sync.Mutex
	images map[string]string // box → the image its containers run
	// bad is an image whose agent never finishes hb init.
	bad string
	// observed is what Observe returns (nothing when nil).
	observed *engine.Observed
	// raced is box → the step that fails once, with the engine's error
	// for a second network of the box's name.
	raced map[string]string
	// ready is box → the token its executor was last waited for with.
	ready map[string]string
	// noRename makes an engine that cannot rename (engine.Capabilities).
	noRename bool
	// readies and inits count each box's executors found ready and hb
	// inits waited for: an agent here finishes hb init only once its
	// executor answered, so that the journal's order does not depend on
	// which of two waits side by side ends first.
	readies, inits map[string]int
}

func (f *fakeEngine) Capabilities() engine.Capabilities {
	return engine.Capabilities{Freeze: true, Rename: !f.noRename}
}

func (f *fakeEngine) Observe(context.Context, ...string) (*engine.Observed, error) {
	if f.observed == nil {
		return &engine.Observed{}, nil
	}
	return f.observed, nil
}

func (f *fakeEngine) imageOf(box string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.images[box]
}

func (f *fakeEngine) run(box, image string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.images[box] = image
}

func boxOf(project string) string { return strings.TrimPrefix(project, "hbl-") }

func (f *fakeEngine) step(box, step string) error {
	f.j.add(box, step)
	f.mu.Lock()
	raced := f.raced[box] == step
	if raced {
		delete(f.raced, box)
	}
	f.mu.Unlock()
	if raced {
		return fmt.Errorf("Error response from daemon: network hbl-%s_default is ambiguous (2 matches found on name): %w", box, engine.ErrRaced)
	}
	if f.fail[box] == step {
		return fmt.Errorf("%s failed", step)
	}
	return nil
}

func (f *fakeEngine) Create(_ context.Context, p *types.Project, force bool) error {
	box := boxOf(p.Name)
	// The token must be on disk before any resource exists.
	if _, ok, _ := f.tokens.Get(box); !ok {
		f.j.add(box, "create without a stored token")
	}
	step := "create"
	if force {
		step = "create --force"
	}
	if err := f.step(box, step); err != nil {
		return err
	}
	f.run(box, p.Services["agent"].Image)
	return nil
}
func (f *fakeEngine) Replace(_ context.Context, p *types.Project, services []string) error {
	return f.step(boxOf(p.Name), "replace "+strings.Join(services, " "))
}
func (f *fakeEngine) Start(_ context.Context, p *types.Project) error {
	return f.step(boxOf(p.Name), "start "+p.Services["agent"].Image)
}
func (f *fakeEngine) Stop(_ context.Context, project string) error {
	return f.step(boxOf(project), "stop")
}
func (f *fakeEngine) RemoveContainer(_ context.Context, id string) error {
	return f.step(strings.Split(id, "/")[0], "rm container "+id)
}
func (f *fakeEngine) RenameContainer(_ context.Context, from, to string) error {
	return f.step(boxOf(strings.TrimSuffix(strings.TrimSuffix(to, "-1"), "-agent")), "rename container "+from+" "+to)
}
func (f *fakeEngine) RemoveNetwork(_ context.Context, id string) error {
	return f.step(strings.Split(id, "/")[0], "rm network "+id)
}
func (f *fakeEngine) RemoveVolume(_ context.Context, name string) error {
	return f.step(strings.Split(name, "/")[0], "rm volume "+name)
}
func (f *fakeEngine) WaitReady(_ context.Context, box, token string) (string, error) {
	if token == "" {
		return "", errors.New("no token")
	}
	f.mu.Lock()
	if f.ready == nil {
		f.ready = map[string]string{}
	}
	f.ready[box] = token
	f.mu.Unlock()
	if err := f.step(box, "ready"); err != nil {
		return "", err
	}
	f.mu.Lock()
	if f.readies == nil {
		f.readies = map[string]int{}
	}
	f.readies[box]++
	f.mu.Unlock()
	return "http://127.0.0.1:1", nil
}
func (f *fakeEngine) WaitInit(ctx context.Context, box string) error {
	for {
		f.mu.Lock()
		ready := f.readies[box] > f.inits[box]
		if ready {
			if f.inits == nil {
				f.inits = map[string]int{}
			}
			f.inits[box]++
		}
		f.mu.Unlock()
		if ready {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	if err := f.step(box, "init"); err != nil {
		return err
	}
	if img := f.imageOf(box); img != "" && img == f.bad {
		return errors.New("agent of " + box + ": the container is restarting (exit 1); its last log lines: hb: error: this image has no user agent")
	}
	return nil
}
func (f *fakeEngine) Previous(_ context.Context, box string) (engine.Previous, error) {
	if err := f.step(box, "record"); err != nil {
		return nil, err
	}
	img := f.imageOf(box)
	if img == "" {
		return nil, nil
	}
	return fakePrevious{f, box, img}, nil
}

type fakePrevious struct {
	f          *fakeEngine
	box, image string
}

func (p fakePrevious) Restore(context.Context) (bool, error) {
	if err := p.f.step(p.box, "restore "+p.image); err != nil {
		return false, err
	}
	p.f.run(p.box, p.image)
	return true, nil
}

type fakeSeeder struct{ j *journal }

func (s fakeSeeder) Seed(_ context.Context, host, box, archive string) error {
	s.j.add(box, "seed "+archive)
	return nil
}
func (s fakeSeeder) Finish(_ context.Context, host, box string) error {
	s.j.add(box, "finish")
	return nil
}

type quietProgress struct{ j *journal }

func (quietProgress) Step(string, string) {}
func (p quietProgress) Done(box string, err error) {
	if err != nil {
		p.j.add(box, "done: "+err.Error())
	} else {
		p.j.add(box, "done")
	}
}

func newApplier(t *testing.T, boxes ...spec.Box) (*apply.Applier, *journal, *fakeEngine) {
	t.Helper()
	cfg := testCfg(boxes...)
	cfg.Path = filepath.Join(t.TempDir(), "boxes.yaml")
	j := &journal{}
	tokens := statedir.Beside(cfg.Path).Tokens()
	e := &fakeEngine{j: j, tokens: tokens, fail: map[string]string{}, images: map[string]string{}}
	return &apply.Applier{Config: cfg, Engines: map[string]engine.Lifecycle{"": e}, Tokens: tokens,
		Parallelism: 2, Progress: quietProgress{j}, Seeder: fakeSeeder{j}}, j, e
}

func stopped(b spec.Box) spec.Box { b.State = spec.Stopped; return b }

func TestApplierStepsOfEachAction(t *testing.T) {
	a, j, _ := newApplier(t, testBox("alpha"), stopped(testBox("beta")), testBox("gamma"), stopped(testBox("delta")), testBox("eps"))
	if err := a.Tokens.Put("gamma", testToken); err != nil {
		t.Fatal(err)
	}
	if err := a.Tokens.Put("eps", testToken); err != nil {
		t.Fatal(err)
	}
	p := &reconcile.Plan{Image: testImage, Boxes: []reconcile.BoxPlan{
		{Name: "alpha", Action: reconcile.Create},
		{Name: "beta", Action: reconcile.Create, Restore: "backups/b.tar.gz.age"},
		{Name: "gamma", Action: reconcile.Recreate},
		{Name: "delta", Action: reconcile.Create},
		{Name: "eps", Action: reconcile.NoOp},
	}}
	if err := a.Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"alpha": {"create", "start " + testImage, "ready", "init", "done"},
		// Seeded: restored before the first start, finished after it,
		// then stopped again because beta is declared stopped.
		"beta":  {"create", "seed backups/b.tar.gz.age", "start " + testImage, "ready", "finish", "init", "stop", "done"},
		"gamma": {"record", "create --force", "start " + testImage, "ready", "init", "done"},
		// Declared stopped: created, never started.
		"delta": {"create", "done"},
	}
	for box, steps := range want {
		if got := j.of(box); !reflect.DeepEqual(got, steps) {
			t.Errorf("%s: %q, want %q", box, got, steps)
		}
	}
	if got := j.of("eps"); got != nil {
		t.Errorf("a no-op did %q", got)
	}
	if tok, _, _ := a.Tokens.Get("gamma"); tok != testToken {
		t.Errorf("a recreate changed the token to %q", tok)
	}
}

func TestApplierRestoredBoxGetsAFreshToken(t *testing.T) {
	a, _, _ := newApplier(t, testBox("alpha"))
	if err := a.Tokens.Put("alpha", testToken); err != nil {
		t.Fatal(err)
	}
	p := reconcile.LoadPlan(testBox("alpha"), testImage, "/tmp/a.tar.gz.age")
	if err := a.Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if tok, ok, _ := a.Tokens.Get("alpha"); !ok || tok == testToken {
		t.Errorf("token after a restore: %q, %v", tok, ok)
	}
}

// A pool box is never made with a token file this directory kept: the file
// may be a previous holder's, kept by the directory that leased the box
// before a reset from another directory deleted it. A recreate keeps the
// token the plan read from the engine; without one (its reason "token") it
// mints a new one too. A box declared by name keeps its file's token.
func TestApplierPoolBoxGetsAFreshToken(t *testing.T) {
	pool := func(b spec.Box) spec.Box { b.Pool = "scratch"; return b }
	for _, tc := range []struct {
		name  string
		box   spec.Box
		plan  reconcile.BoxPlan
		fresh bool
	}{
		{"pool box created", pool(testBox("scratch-1")), reconcile.BoxPlan{Name: "scratch-1", Action: reconcile.Create}, true},
		{"pool box recreated without the engine's token", pool(testBox("scratch-1")),
			reconcile.BoxPlan{Name: "scratch-1", Action: reconcile.Recreate, Reasons: []reconcile.Reason{{Kind: "token"}, {Kind: "nocontainers"}}}, true},
		{"pool box recreated with the engine's token", pool(testBox("scratch-1")),
			reconcile.BoxPlan{Name: "scratch-1", Action: reconcile.Recreate, Reasons: []reconcile.Reason{{Kind: "replace"}}}, false},
		{"box created", testBox("alpha"), reconcile.BoxPlan{Name: "alpha", Action: reconcile.Create}, false},
		{"box recreated", testBox("alpha"), reconcile.BoxPlan{Name: "alpha", Action: reconcile.Recreate, Reasons: []reconcile.Reason{{Kind: "replace"}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _, e := newApplier(t, tc.box)
			if err := a.Tokens.Put(tc.box.Name, testToken); err != nil {
				t.Fatal(err)
			}
			if err := a.Apply(context.Background(), &reconcile.Plan{Image: testImage, Boxes: []reconcile.BoxPlan{tc.plan}}); err != nil {
				t.Fatal(err)
			}
			tok, ok, _ := a.Tokens.Get(tc.box.Name)
			if !ok || (tok != testToken) != tc.fresh {
				t.Errorf("token after the apply: %q (kept: %v), want a fresh one: %v", tok, tok == testToken, tc.fresh)
			}
			if got := e.ready[tc.box.Name]; got != tok {
				t.Errorf("the box was made ready with token %q, stored %q", got, tok)
			}
		})
	}
}

// A bad token file is replaced by a box made with a fresh token, which
// never reads it; a box that keeps its token is not made on it.
func TestApplierBadTokenFile(t *testing.T) {
	pool := testBox("scratch-1")
	pool.Pool = "scratch"
	for _, tc := range []struct {
		name string
		box  spec.Box
		ok   bool
	}{{"fresh token", pool, true}, {"kept token", testBox("alpha"), false}} {
		t.Run(tc.name, func(t *testing.T) {
			a, _, e := newApplier(t, tc.box)
			if err := os.MkdirAll(a.Tokens.Dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(a.Tokens.Path(tc.box.Name), []byte("garbage\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			err := a.Apply(context.Background(), &reconcile.Plan{Image: testImage, Boxes: []reconcile.BoxPlan{{Name: tc.box.Name, Action: reconcile.Create}}})
			if tc.ok {
				tok, ok, gerr := a.Tokens.Get(tc.box.Name)
				if err != nil || !ok || gerr != nil || e.ready[tc.box.Name] != tok {
					t.Errorf("apply: %v; token %q %v %v", err, tok, ok, gerr)
				}
				return
			}
			if !errors.Is(err, statedir.ErrBadRecord) || !strings.Contains(err.Error(), "alpha.env") {
				t.Errorf("apply: %v, want the bad token file named", err)
			}
			if _, made := e.ready[tc.box.Name]; made {
				t.Error("the box was made on a bad token file")
			}
		})
	}
}

func TestApplierDeleteOrder(t *testing.T) {
	a, j, _ := newApplier(t)
	if err := a.Tokens.Put("old", testToken); err != nil {
		t.Fatal(err)
	}
	r := engine.Resources{
		Containers: []engine.Container{{ID: "old/c1", Name: "hbl-old-agent-1"}, {ID: "old/c2", Name: "hbl-old-executor-1"}},
		Networks:   []engine.Network{{ID: "old/n1", Name: "hbl-old_default"}},
		Volumes:    []engine.Volume{{Name: "old/v1"}, {Name: "old/v2"}},
	}
	if err := a.Apply(context.Background(), reconcile.DeletePlan("", "old", r, "")); err != nil {
		t.Fatal(err)
	}
	want := []string{"rm container old/c1", "rm container old/c2", "rm network old/n1", "rm volume old/v1", "rm volume old/v2", "done"}
	if got := j.of("old"); !reflect.DeepEqual(got, want) {
		t.Errorf("%q, want %q", got, want)
	}
	if _, ok, _ := a.Tokens.Get("old"); ok {
		t.Error("the deleted box's token is still stored")
	}
}

func TestApplierCollectsErrorsWhileOthersFinish(t *testing.T) {
	a, j, e := newApplier(t, testBox("alpha"), testBox("beta"), testBox("gamma"))
	e.fail["alpha"] = "create"
	e.fail["gamma"] = "ready"
	p := &reconcile.Plan{Image: testImage, Boxes: []reconcile.BoxPlan{
		{Name: "gamma", Action: reconcile.Create},
		{Name: "alpha", Action: reconcile.Create},
		{Name: "beta", Action: reconcile.Create},
	}}
	err := a.Apply(context.Background(), p)
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("want joined errors, got %v", err)
	}
	var names []string
	for _, e := range joined.Unwrap() {
		var be *apply.BoxError
		if !errors.As(e, &be) {
			t.Fatalf("%v is not a BoxError", e)
		}
		names = append(names, be.Box)
	}
	if !reflect.DeepEqual(names, []string{"alpha", "gamma"}) {
		t.Errorf("failed boxes %q, want alpha, gamma in order", names)
	}
	if got := j.of("beta"); len(got) == 0 || got[len(got)-1] != "done" {
		t.Errorf("beta did not finish: %q", got)
	}
	if got := j.of("alpha"); !reflect.DeepEqual(got, []string{"create", "done: create failed"}) {
		t.Errorf("alpha went on after its failure: %q", got)
	}
}

func TestApplierOneBoxPlans(t *testing.T) {
	a, j, _ := newApplier(t, stopped(testBox("alpha")))
	// start starts a box declared stopped (the user asked), on the image
	// it already runs, and fails without a token.
	if err := a.Apply(context.Background(), reconcile.StartPlan("", "alpha", oldImage)); !errors.Is(err, apply.ErrNoToken) {
		t.Errorf("start without a token: %v", err)
	}
	if err := a.Tokens.Put("alpha", testToken); err != nil {
		t.Fatal(err)
	}
	if err := a.Apply(context.Background(), reconcile.StartPlan("", "alpha", oldImage)); err != nil {
		t.Fatal(err)
	}
	if err := a.Apply(context.Background(), reconcile.StopPlan("", "alpha")); err != nil {
		t.Fatal(err)
	}
	want := []string{"done: box alpha: the box has no token in .boxes/secrets", "start " + oldImage, "ready", "init", "done", "stop", "done"}
	if got := j.of("alpha"); !reflect.DeepEqual(got, want) {
		t.Errorf("%q, want %q", got, want)
	}
	// start refuses an undeclared box; the plan of a load seeds a create.
	if err := a.Apply(context.Background(), reconcile.StartPlan("", "ghost", oldImage)); !errors.Is(err, apply.ErrUndeclared) {
		t.Errorf("start of an undeclared box: %v", err)
	}
	p := reconcile.LoadPlan(stopped(testBox("alpha")), testImage, "/a.tar.gz.age")
	if b := p.Boxes[0]; b.Action != reconcile.Create || b.Restore != "/a.tar.gz.age" || p.Image != testImage {
		t.Errorf("load plan %+v", p)
	}
	d := reconcile.DeletePlan("nexus", "old", engine.Resources{Volumes: []engine.Volume{{Name: "v"}}}, "backups/x")
	if b := d.Boxes[0]; b.Action != reconcile.Delete || b.Host != "nexus" || b.Delete.Backup != "backups/x" || len(b.Delete.Volumes) != 1 {
		t.Errorf("delete plan %+v", d.Boxes[0])
	}
}

func TestApplierHeldLocks(t *testing.T) {
	a, _, _ := newApplier(t, testBox("alpha"))
	lock, err := statedir.LockBox(a.Config.Path, "alpha", "test")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	if err := a.Apply(context.Background(), reconcile.StopPlan("", "alpha")); !errors.Is(err, statedir.ErrLocked) {
		t.Errorf("apply over a held box lock: %v", err)
	}
	a.Held = map[string]bool{"alpha": true}
	if err := a.Apply(context.Background(), reconcile.StopPlan("", "alpha")); err != nil {
		t.Errorf("apply by the lock's holder: %v", err)
	}
}

// load leaves a box declared stopped running for its doctor check; the
// command stops it after.
func TestApplierLoadPlanLeavesTheBoxRunning(t *testing.T) {
	a, j, _ := newApplier(t, stopped(testBox("alpha")))
	if err := a.Apply(context.Background(), reconcile.LoadPlan(stopped(testBox("alpha")), testImage, "/a.tar.gz.age")); err != nil {
		t.Fatal(err)
	}
	want := []string{"create", "seed /a.tar.gz.age", "start " + testImage, "ready", "finish", "init", "done"}
	if got := j.of("alpha"); !reflect.DeepEqual(got, want) {
		t.Errorf("%q, want %q", got, want)
	}
}

func TestApplierRemovesStraysBeforeRecreating(t *testing.T) {
	a, j, _ := newApplier(t, testBox("alpha"))
	if err := a.Tokens.Put("alpha", testToken); err != nil {
		t.Fatal(err)
	}
	p := &reconcile.Plan{Image: testImage, Boxes: []reconcile.BoxPlan{
		{Name: "alpha", Action: reconcile.Recreate, Strays: []reconcile.NamedID{{Name: "0123abcd_hbl-alpha-agent-1", ID: "alpha/stray"}}},
	}}
	if err := a.Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	want := []string{"rm container alpha/stray", "record", "create --force", "start " + testImage, "ready", "init", "done"}
	if got := j.of("alpha"); !reflect.DeepEqual(got, want) {
		t.Errorf("steps %q, want %q", got, want)
	}
}

// A container an interrupted recreate left under another name is given
// its own name back before the recreate; an engine that cannot rename has
// it removed instead, and made again by the recreate.
func TestApplierRenamesBeforeRecreating(t *testing.T) {
	const old = "0123abcd_hbl-alpha-agent-1"
	recreate := []string{"record", "create --force", "start " + testImage, "ready", "init", "done"}
	for _, noRename := range []bool{false, true} {
		a, j, e := newApplier(t, testBox("alpha"))
		e.noRename = noRename
		if err := a.Tokens.Put("alpha", testToken); err != nil {
			t.Fatal(err)
		}
		p := &reconcile.Plan{Image: testImage, Boxes: []reconcile.BoxPlan{
			{Name: "alpha", Action: reconcile.Recreate, Reasons: []reconcile.Reason{{Kind: "renamed", Service: "agent", Old: old, New: "hbl-alpha-agent-1"}}},
		}}
		if err := a.Apply(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		want := append([]string{"rename container " + old + " hbl-alpha-agent-1"}, recreate...)
		if noRename {
			want = recreate
			if !slices.Contains(j.all, old+": rm container "+old) {
				t.Errorf("without rename, the container under another name was not removed: %q", j.all)
			}
		}
		if got := j.of("alpha"); !reflect.DeepEqual(got, want) {
			t.Errorf("rename %v: steps %q, want %q", !noRename, got, want)
		}
	}
}

// A request of a killed apply that lands after the plan (a second network
// of the box's name) fails the start once: apply removes the second
// network and the containers it made, makes them again and goes on.
func TestApplierSettlesARacedRequest(t *testing.T) {
	a, j, e := newApplier(t, testBox("alpha"))
	o := emptyObserved()
	observeBox(t, o, testBox("alpha"), testImage, "created", 0)
	o.Networks = append(o.Networks, engine.Network{ID: "net-alpha-late", Name: compose.NetworkName("alpha"), Box: "alpha", Fleet: testFleet})
	e.observed = o
	e.raced = map[string]string{"alpha": "start " + testImage}
	p := &reconcile.Plan{Image: testImage, Boxes: []reconcile.BoxPlan{{Name: "alpha", Action: reconcile.Create}}}
	if err := a.Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	var removed []string
	for _, s := range j.all {
		if _, step, _ := strings.Cut(s, ": "); strings.HasPrefix(step, "rm ") {
			removed = append(removed, step)
		}
	}
	// The box's three containers (made by the raced request, none running)
	// and the later default network; the inside network is not duplicated
	// and stays.
	wantRemoved := []string{"rm container id-alpha-agent", "rm container id-alpha-executor", "rm container id-alpha-gate", "rm network net-alpha-late"}
	if !reflect.DeepEqual(removed, wantRemoved) {
		t.Errorf("removed %q, want alpha's 3 containers and the later network (the one no container is on): %q", removed, wantRemoved)
	}
	got := j.of("alpha")
	if tail := got[len(got)-5:]; !reflect.DeepEqual(tail, []string{"create", "start " + testImage, "ready", "init", "done"}) {
		t.Errorf("steps %q: not made again and started", got)
	}
}

// preparingSeeder is a seeder with work to start beside the create.
type preparingSeeder struct{ fakeSeeder }

func (s preparingSeeder) Prepare(_ context.Context, host, box, source, image string) {
	s.j.add(box, "prepare "+source+" "+image)
}

// A seeder that prepares is asked to before the box is created, with the
// plan's image, so that what it prepares runs beside the create; one that
// does not prepare seeds just the same (TestApplierLoadPlanLeavesTheBoxRunning).
func TestApplierPreparesTheSeedBeforeTheCreate(t *testing.T) {
	a, j, _ := newApplier(t, testBox("alpha"))
	a.Seeder = preparingSeeder{fakeSeeder{j}}
	if err := a.Apply(context.Background(), reconcile.LoadPlan(testBox("alpha"), testImage, "/a.tar.gz.age")); err != nil {
		t.Fatal(err)
	}
	want := []string{"prepare /a.tar.gz.age " + testImage, "create", "seed /a.tar.gz.age", "start " + testImage, "ready", "finish", "init", "done"}
	if got := j.of("alpha"); !reflect.DeepEqual(got, want) {
		t.Errorf("%q, want %q", got, want)
	}
}
