package reconcile_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/reconcile"
)

type fakeSizer struct {
	sizes map[string]reconcile.VolumeSize
	asked []string
}

func (f *fakeSizer) VolumeSizes(_ context.Context, _ *reconcile.Observed, volumes []string, _ bool) map[string]reconcile.VolumeSize {
	f.asked = append(f.asked, volumes...)
	out := map[string]reconcile.VolumeSize{}
	for _, v := range volumes {
		out[v] = f.sizes[v]
	}
	return out
}

func TestMeasureDeletes(t *testing.T) {
	o := emptyObserved()
	observeBox(t, o, testBox("old"), testImage, "running", 0)
	observeBox(t, o, testBox("web"), testImage, "running", 0)
	observeBox(t, o, inFleet(testBox("theirs"), "team-b"), testImage, "running", 0)
	in := reconcile.Input{Config: testCfg(testBox("web")), Image: testImage, Observed: obsMap(o), Tokens: map[string]string{"web": testToken}}
	agent, scratch := compose.VolumeName("old", compose.AgentVolume), compose.VolumeName("old", compose.ExecutorVolume)
	f := &fakeSizer{sizes: map[string]reconcile.VolumeSize{
		agent:   {Bytes: 3 << 30},
		scratch: {Unread: "du took longer than 5s"},
	}}
	sizes := reconcile.MeasureDeletes(context.Background(), in, func(string) reconcile.VolumeSizer { return f }, true)
	p, err := reconcile.NewPlan(in)
	if err != nil {
		t.Fatal(err)
	}
	p.SetVolumeSizes(sizes(0))
	if strings.Join(f.asked, " ") != agent+" "+scratch {
		t.Errorf("measured %v, want only the deleted box's volumes", f.asked)
	}
	var buf bytes.Buffer
	p.RenderText(&buf, false)
	for _, want := range []string{"volume " + agent + " (3.0 GiB)", "volume " + scratch + " (size not read: du took longer than 5s)"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, buf.String())
		}
	}
}

// slowSizer answers only once released.
type slowSizer struct{ release chan struct{} }

func (s slowSizer) VolumeSizes(ctx context.Context, _ *reconcile.Observed, volumes []string, _ bool) map[string]reconcile.VolumeSize {
	select {
	case <-s.release:
	case <-ctx.Done():
	}
	out := map[string]reconcile.VolumeSize{}
	for _, v := range volumes {
		out[v] = reconcile.VolumeSize{Bytes: 1 << 20}
	}
	return out
}

// A plan waits for sizes only as long as it was given: those not in by
// then are said to be unread, and why; without a budget it waits.
func TestMeasureDeletesWithinABudget(t *testing.T) {
	o := emptyObserved()
	observeBox(t, o, testBox("old"), testImage, "running", 0)
	in := reconcile.Input{Config: testCfg(), Image: testImage, Observed: obsMap(o)}
	agent := compose.VolumeName("old", compose.AgentVolume)

	slow := slowSizer{release: make(chan struct{})}
	defer close(slow.release)
	began := time.Now()
	got := reconcile.MeasureDeletes(context.Background(), in, func(string) reconcile.VolumeSizer { return slow }, false)(20 * time.Millisecond)
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("waited %s for a 20ms budget", took)
	}
	if v := got[""][agent]; v.Unread != "not measured within the 20ms a plan gives it; boxes apply waits for it" {
		t.Errorf("size past the budget: %+v", v)
	}

	quick := slowSizer{release: make(chan struct{})}
	close(quick.release)
	got = reconcile.MeasureDeletes(context.Background(), in, func(string) reconcile.VolumeSizer { return quick }, false)(0)
	if v := got[""][agent]; v.Bytes != 1<<20 || v.Unread != "" {
		t.Errorf("size without a budget: %+v", v)
	}
}
