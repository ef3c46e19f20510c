package apply_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/apply"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
	"github.com/hermes-box/boxes/statedir"
)

const initFails = "agent of alpha: the container is restarting (exit 1); its last log lines: hb: error: this image has no user agent"

// imageChange is the plan's recreate of a box from oldImage to testImage.
func imageChange(name string) reconcile.BoxPlan {
	return reconcile.BoxPlan{Name: name, Action: reconcile.Recreate,
		Reasons: []reconcile.Reason{{Kind: "image", Old: oldImage, New: testImage}}}
}

// onOldImage is an applier whose boxes all run oldImage, with their tokens.
func onOldImage(t *testing.T, names ...string) (*apply.Applier, *journal, *fakeEngine) {
	t.Helper()
	var boxes []spec.Box
	for _, n := range names {
		boxes = append(boxes, testBox(n))
	}
	a, j, e := newApplier(t, boxes...)
	for _, n := range names {
		e.run(n, oldImage)
		if err := a.Tokens.Put(n, testToken); err != nil {
			t.Fatal(err)
		}
	}
	return a, j, e
}

// A box is ready when its agent has finished hb init too, not when only
// its executor answers: a new box whose agent cannot start fails.
func TestApplierReadyMeansTheAgentToo(t *testing.T) {
	a, j, e := newApplier(t, testBox("alpha"))
	e.bad = testImage
	err := a.Apply(context.Background(), &reconcile.Plan{Image: testImage, Boxes: []reconcile.BoxPlan{{Name: "alpha", Action: reconcile.Create}}})
	if err == nil || !strings.Contains(err.Error(), "hb: error: this image has no user agent") {
		t.Fatalf("apply of a box whose agent fails: %v", err)
	}
	want := []string{"create", "start " + testImage, "ready", "init", "done: " + initFails}
	if got := j.of("alpha"); !reflect.DeepEqual(got, want) {
		t.Errorf("%q, want %q", got, want)
	}
}

// A recreate whose new containers do not become ready puts the box back
// on the containers it ran before, and says so.
func TestApplierPutsAFailedRecreateBack(t *testing.T) {
	for _, failAt := range []string{"init", "start " + testImage, "create --force"} {
		t.Run(failAt, func(t *testing.T) {
			a, j, e := onOldImage(t, "alpha")
			if failAt == "init" {
				e.bad = testImage
			} else {
				e.fail["alpha"] = failAt
			}
			err := a.Apply(context.Background(), &reconcile.Plan{Image: testImage, Boxes: []reconcile.BoxPlan{imageChange("alpha")}})
			var nr *apply.NotReadyError
			if !errors.As(err, &nr) || !nr.Restored || nr.Back != nil {
				t.Fatalf("apply: %v", err)
			}
			if !strings.Contains(err.Error(), "alpha: the new containers did not become ready: ") ||
				!strings.Contains(err.Error(), "the box is back on its previous image and settings") {
				t.Errorf("message: %v", err)
			}
			steps := j.of("alpha")
			i := len(steps) - 4
			if i < 0 || !reflect.DeepEqual(steps[i:i+3], []string{"restore " + oldImage, "ready", "init"}) {
				t.Errorf("steps %q: want the previous containers restored and checked", steps)
			}
			if got := e.imageOf("alpha"); got != oldImage {
				t.Errorf("alpha runs %s after the failed recreate, want %s", got, oldImage)
			}
		})
	}
}

// The first box recreated onto a new image is the canary: the others wait
// for it, and are left alone when it fails. Other changes go on.
func TestApplierCanaryStopsABadImage(t *testing.T) {
	a, j, e := onOldImage(t, "alpha", "beta", "gamma", "delta")
	a.Parallelism = 4
	e.bad = testImage
	a.Config.Boxes = append(a.Config.Boxes, testBox("eps"))
	p := &reconcile.Plan{Image: testImage, Boxes: []reconcile.BoxPlan{
		imageChange("alpha"), imageChange("beta"), imageChange("gamma"),
		{Name: "delta", Action: reconcile.Stop},
		{Name: "eps", Action: reconcile.Create},
	}}
	err := a.Apply(context.Background(), p)
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("want joined errors, got %v", err)
	}
	var failed []string
	for _, e := range joined.Unwrap() {
		failed = append(failed, e.(*apply.BoxError).Box)
	}
	// eps is a new box on the bad image: it fails on its own.
	if !reflect.DeepEqual(failed, []string{"alpha", "beta", "eps", "gamma"}) {
		t.Errorf("failed boxes %q", failed)
	}
	for _, box := range []string{"beta", "gamma"} {
		steps := j.of(box)
		if len(steps) != 1 || !strings.HasPrefix(steps[0], "done: not recreated, left on its current image: the new image "+reconcile.ShortID(testImage)+" failed on alpha first") {
			t.Errorf("%s: %q", box, steps)
		}
		if e.imageOf(box) != oldImage {
			t.Errorf("%s was touched", box)
		}
	}
	if !errors.Is(err, apply.ErrCanaryFailed) {
		t.Errorf("%v is not ErrCanaryFailed", err)
	}
	if got := j.of("delta"); !reflect.DeepEqual(got, []string{"stop", "done"}) {
		t.Errorf("delta: %q", got)
	}
}

// A good image: the canary first, alone among the recreates onto it, then
// the others in parallel.
func TestApplierCanaryGoesFirst(t *testing.T) {
	a, j, _ := onOldImage(t, "alpha", "beta", "gamma")
	a.Parallelism = 4
	p := &reconcile.Plan{Image: testImage, Boxes: []reconcile.BoxPlan{imageChange("alpha"), imageChange("beta"), imageChange("gamma")}}
	if err := a.Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	done := j.at("alpha", "done")
	for _, box := range []string{"beta", "gamma"} {
		if first := j.at(box, "record"); first < done {
			t.Errorf("%s began (step %d) before the canary was done (step %d)", box, first, done)
		}
		if got := j.of(box); got[len(got)-1] != "done" {
			t.Errorf("%s: %q", box, got)
		}
	}
}

// A canary that fails before its containers are touched (its lock is
// held) says nothing of the image: the next box is the canary.
func TestApplierCanaryFailingBeforeTheChange(t *testing.T) {
	a, j, _ := onOldImage(t, "alpha", "beta", "gamma")
	lock, err := statedir.LockBox(a.Config.Path, "alpha", "test")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	p := &reconcile.Plan{Image: testImage, Boxes: []reconcile.BoxPlan{imageChange("alpha"), imageChange("beta"), imageChange("gamma")}}
	if err := a.Apply(context.Background(), p); !errors.Is(err, statedir.ErrLocked) || errors.Is(err, apply.ErrCanaryFailed) {
		t.Fatalf("apply: %v", err)
	}
	for _, box := range []string{"beta", "gamma"} {
		if got := j.of(box); got[len(got)-1] != "done" {
			t.Errorf("%s: %q", box, got)
		}
	}
}

// A box declared stopped is recreated without being started: it proves
// nothing of the image, and the next box is the canary.
func TestApplierCanaryMustRun(t *testing.T) {
	a, j, e := onOldImage(t, "alpha", "beta", "gamma")
	a.Config.Boxes[0].State = spec.Stopped
	e.bad = testImage
	asleep := imageChange("alpha")
	asleep.State = spec.Stopped
	p := &reconcile.Plan{Image: testImage, Boxes: []reconcile.BoxPlan{asleep, imageChange("beta"), imageChange("gamma")}}
	err := a.Apply(context.Background(), p)
	if !errors.Is(err, apply.ErrCanaryFailed) {
		t.Fatalf("apply: %v", err)
	}
	if got := j.of("alpha"); !reflect.DeepEqual(got, []string{"record", "create --force", "done"}) {
		t.Errorf("alpha: %q", got)
	}
	if got := j.of("beta"); len(got) < 2 || got[1] != "create --force" {
		t.Errorf("beta was not the canary: %q", got)
	}
	if got := j.of("gamma"); len(got) != 1 || !strings.Contains(got[0], "failed on beta first") {
		t.Errorf("gamma: %q", got)
	}
}
