package reconcile_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/reconcile"
)

type fakeSizer struct {
	sizes map[string]engine.VolumeSize
	asked []string
}

func (f *fakeSizer) VolumeSizes(_ context.Context, _ *engine.Observed, volumes []string) map[string]engine.VolumeSize {
	f.asked = append(f.asked, volumes...)
	out := map[string]engine.VolumeSize{}
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
	f := &fakeSizer{sizes: map[string]engine.VolumeSize{
		agent:   {Bytes: 3 << 30},
		scratch: {Unread: "du took longer than 5s"},
	}}
	sizes := reconcile.MeasureDeletes(context.Background(), in, func(string) engine.VolumeSizer { return f })
	p, err := reconcile.NewPlan(in)
	if err != nil {
		t.Fatal(err)
	}
	p.SetVolumeSizes(sizes())
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
