package reconcile_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/plantest"
	"github.com/hermes-box/boxes/reconcile"
	"github.com/hermes-box/boxes/spec"
)

const (
	testImage  = plantest.Image
	oldImage   = plantest.OldImage
	testToken  = plantest.Token
	testConfig = plantest.ConfigPath
	testFleet  = plantest.Fleet
	autoPort   = plantest.AutoPort
	gib        = plantest.GiB
)

// The shared fixtures, by the names these tests use.
var (
	testBox       = plantest.Box
	testCfg       = plantest.Config
	observeBox    = plantest.ObserveBox
	emptyObserved = plantest.EmptyObserved
	volumeOf      = plantest.VolumeOf
)

func obsMap(o *engine.Observed) map[string]*engine.Observed {
	return map[string]*engine.Observed{"": o}
}

func TestNewPlan(t *testing.T) {
	stopped := testBox("web")
	stopped.State = spec.Stopped
	changed := testBox("web")
	changed.Env = map[string]string{"TZ": "Europe/Berlin"}
	auto := testBox("web")

	tests := []struct {
		name string
		in   func(t *testing.T) reconcile.Input
		want []reconcile.BoxPlan
	}{
		{
			name: "empty observed creates both",
			in: func(t *testing.T) reconcile.Input {
				return reconcile.Input{Config: testCfg(testBox("a"), testBox("b")), Image: testImage, Observed: obsMap(emptyObserved())}
			},
			want: []reconcile.BoxPlan{
				{Name: "a", Action: reconcile.Create, State: spec.Running, Reasons: []reconcile.Reason{{Kind: "new"}}, Door: openDoor},
				{Name: "b", Action: reconcile.Create, State: spec.Running, Reasons: []reconcile.Reason{{Kind: "new"}}, Door: openDoor},
			},
		},
		{
			name: "fully observed and running is a no-op",
			in: func(t *testing.T) reconcile.Input {
				o := emptyObserved()
				observeBox(t, o, testBox("web"), testImage, "running", 0)
				return reconcile.Input{Config: testCfg(testBox("web")), Image: testImage, Observed: obsMap(o), Tokens: map[string]string{"web": testToken}}
			},
			want: []reconcile.BoxPlan{{Name: "web", Action: reconcile.NoOp, HostPort: autoPort, State: spec.Running}},
		},
		{
			name: "exited and declared running starts",
			in: func(t *testing.T) reconcile.Input {
				o := emptyObserved()
				observeBox(t, o, testBox("web"), testImage, "exited", 0)
				return reconcile.Input{Config: testCfg(testBox("web")), Image: testImage, Observed: obsMap(o), Tokens: map[string]string{"web": testToken}}
			},
			want: []reconcile.BoxPlan{{Name: "web", Action: reconcile.Start, State: spec.Running,
				Reasons: []reconcile.Reason{{Kind: "state", Old: "stopped", New: "running"}}}},
		},
		{
			name: "running and declared stopped stops",
			in: func(t *testing.T) reconcile.Input {
				o := emptyObserved()
				observeBox(t, o, stopped, testImage, "running", 0)
				return reconcile.Input{Config: testCfg(stopped), Image: testImage, Observed: obsMap(o), Tokens: map[string]string{"web": testToken}}
			},
			want: []reconcile.BoxPlan{{Name: "web", Action: reconcile.Stop, HostPort: autoPort, State: spec.Stopped,
				Reasons: []reconcile.Reason{{Kind: "state", Old: "running", New: "stopped"}}}},
		},
		{
			name: "image differs recreates",
			in: func(t *testing.T) reconcile.Input {
				o := emptyObserved()
				observeBox(t, o, testBox("web"), oldImage, "running", 0)
				return reconcile.Input{Config: testCfg(testBox("web")), Image: testImage, Observed: obsMap(o), Tokens: map[string]string{"web": testToken}}
			},
			want: []reconcile.BoxPlan{{Name: "web", Action: reconcile.Recreate, State: spec.Running, HostPort: autoPort,
				Reasons: []reconcile.Reason{{Kind: "image", Old: oldImage, New: testImage}}}},
		},
		{
			name: "env changed recreates naming the field",
			in: func(t *testing.T) reconcile.Input {
				o := emptyObserved()
				observeBox(t, o, testBox("web"), testImage, "running", 0) // old env TZ=UTC
				return reconcile.Input{Config: testCfg(changed), Image: testImage, Observed: obsMap(o), Tokens: map[string]string{"web": testToken}}
			},
			want: []reconcile.BoxPlan{{Name: "web", Action: reconcile.Recreate, State: spec.Running, HostPort: autoPort,
				Reasons: []reconcile.Reason{{Kind: "config", Field: "env.TZ", Old: "UTC", New: "Europe/Berlin"}}}},
		},
		{
			name: "missing executor container recreates",
			in: func(t *testing.T) reconcile.Input {
				o := emptyObserved()
				observeBox(t, o, testBox("web"), testImage, "running", 0)
				var keep []engine.Container
				for _, c := range o.Containers {
					if c.Service != compose.ExecutorService {
						keep = append(keep, c)
					}
				}
				o.Containers = keep
				return reconcile.Input{Config: testCfg(testBox("web")), Image: testImage, Observed: obsMap(o), Tokens: map[string]string{"web": testToken}}
			},
			want: []reconcile.BoxPlan{{Name: "web", Action: reconcile.Recreate, State: spec.Running,
				Reasons: []reconcile.Reason{{Kind: "missing", Service: compose.ExecutorService}}}},
		},
		{
			name: "replace recreates",
			in: func(t *testing.T) reconcile.Input {
				o := emptyObserved()
				observeBox(t, o, testBox("web"), testImage, "running", 0)
				return reconcile.Input{Config: testCfg(testBox("web")), Image: testImage, Observed: obsMap(o),
					Tokens: map[string]string{"web": testToken}, Replace: map[string]bool{"web": true}}
			},
			want: []reconcile.BoxPlan{{Name: "web", Action: reconcile.Recreate, State: spec.Running, HostPort: autoPort,
				Reasons: []reconcile.Reason{{Kind: "replace"}}}},
		},
		{
			name: "undeclared box is deleted",
			in: func(t *testing.T) reconcile.Input {
				o := emptyObserved()
				observeBox(t, o, testBox("old"), testImage, "running", 0)
				return reconcile.Input{Config: testCfg(), Image: testImage, Observed: obsMap(o),
					Backups: map[string]string{"old": "backups/old-2026-01-01.tar.age"}}
			},
			want: []reconcile.BoxPlan{{Name: "old", Action: reconcile.Delete,
				Reasons: []reconcile.Reason{{Kind: "undeclared"}},
				Delete: &reconcile.Deletion{
					Containers: []reconcile.NamedID{
						{Name: "hbl-old-agent-1", ID: "id-old-agent"},
						{Name: "hbl-old-executor-1", ID: "id-old-executor"},
						{Name: "hbl-old-gate-1", ID: "id-old-gate"},
					},
					Networks: []reconcile.NamedID{{Name: "hbl-old_default", ID: "net-old"}, {Name: "hbl-old_inside", ID: "inside-old"}},
					Volumes: []reconcile.DeletedVolume{
						{Name: "hbl-old_agent-data", Size: -1, Unread: "not measured"},
						{Name: "hbl-old_exec-data", Size: -1, Unread: "not measured"},
					},
					Backup: "backups/old-2026-01-01.tar.age",
				}}},
		},
		{
			name: "target limits the plan",
			in: func(t *testing.T) reconcile.Input {
				o := emptyObserved()
				observeBox(t, o, testBox("old"), testImage, "running", 0)
				return reconcile.Input{Config: testCfg(testBox("a"), testBox("b")), Image: testImage, Observed: obsMap(o),
					Target: map[string]bool{"b": true}}
			},
			want: []reconcile.BoxPlan{{Name: "b", Action: reconcile.Create, State: spec.Running, Reasons: []reconcile.Reason{{Kind: "new"}}, Door: openDoor}},
		},
		{
			name: "auto port kept is a no-op",
			in: func(t *testing.T) reconcile.Input {
				o := emptyObserved()
				observeBox(t, o, auto, testImage, "running", 49153) // hashed with HostPort 0
				return reconcile.Input{Config: testCfg(auto), Image: testImage, Observed: obsMap(o), Tokens: map[string]string{"web": testToken}}
			},
			want: []reconcile.BoxPlan{{Name: "web", Action: reconcile.NoOp, State: spec.Running, HostPort: 49153}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := reconcile.NewPlan(tt.in(t))
			if err != nil {
				t.Fatalf("NewPlan: %v", err)
			}
			if !reflect.DeepEqual(p.Boxes, tt.want) {
				t.Errorf("boxes:\n got %+v\nwant %+v", p.Boxes, tt.want)
				for _, b := range p.Boxes {
					if b.Delete != nil {
						t.Logf("%s delete: %+v", b.Name, *b.Delete)
					}
				}
			}
			if p.Image != testImage {
				t.Errorf("Image = %q", p.Image)
			}
		})
	}
}

func TestNewPlanTargetRecorded(t *testing.T) {
	in := reconcile.Input{Config: testCfg(testBox("a"), testBox("b")), Image: testImage, Observed: obsMap(emptyObserved()),
		Target: map[string]bool{"b": true, "a": true}}
	p, err := reconcile.NewPlan(in)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p.Target, []string{"a", "b"}) {
		t.Errorf("Target = %v", p.Target)
	}
	in.Target = map[string]bool{"nope": true}
	if _, err := reconcile.NewPlan(in); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown target: err = %v", err)
	}
}

func TestNewPlanErrors(t *testing.T) {
	t.Run("unmanaged conflict", func(t *testing.T) {
		o := emptyObserved()
		vol := compose.VolumeName("new", compose.AgentVolume)
		o.Unmanaged.Volumes = map[string]bool{vol: true}
		_, err := reconcile.NewPlan(reconcile.Input{Config: testCfg(testBox("new")), Image: testImage, Observed: obsMap(o)})
		if !errors.Is(err, reconcile.ErrUnmanagedConflict) {
			t.Fatalf("err = %v, want ErrUnmanagedConflict", err)
		}
		if !strings.Contains(err.Error(), vol) {
			t.Errorf("err %q does not name %s", err, vol)
		}
		var ce *reconcile.ConflictError
		if !errors.As(err, &ce) || len(ce.Resources) != 1 {
			t.Errorf("ConflictError = %+v", ce)
		}
	})
	t.Run("no image", func(t *testing.T) {
		_, err := reconcile.NewPlan(reconcile.Input{Config: testCfg(testBox("a")), Observed: obsMap(emptyObserved())})
		if !errors.Is(err, reconcile.ErrNoImage) {
			t.Fatalf("err = %v, want ErrNoImage", err)
		}
	})
	t.Run("image missing", func(t *testing.T) {
		o := emptyObserved()
		o.Images[testImage] = false
		_, err := reconcile.NewPlan(reconcile.Input{Config: testCfg(testBox("a")), Image: testImage, Observed: obsMap(o)})
		if !errors.Is(err, reconcile.ErrImageMissing) {
			t.Fatalf("err = %v, want ErrImageMissing", err)
		}
	})
	t.Run("no config", func(t *testing.T) {
		if _, err := reconcile.NewPlan(reconcile.Input{}); err == nil {
			t.Fatal("want an error without a config")
		}
	})
}

func TestNewPlanDeterministic(t *testing.T) {
	mk := func() reconcile.Input {
		o := emptyObserved()
		observeBox(t, o, testBox("web"), oldImage, "running", 0)
		observeBox(t, o, testBox("old"), testImage, "exited", 0)
		return reconcile.Input{
			Config:   testCfg(testBox("a"), testBox("web"), testBox("z")),
			Image:    testImage,
			Observed: obsMap(o),
			Tokens:   map[string]string{"web": testToken},
			Target:   map[string]bool{"a": true, "web": true, "old": true},
		}
	}
	p1, err := reconcile.NewPlan(mk())
	if err != nil {
		t.Fatal(err)
	}
	p2, err := reconcile.NewPlan(mk())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p1, p2) {
		t.Errorf("plans differ:\n%+v\n%+v", p1, p2)
	}
}

// inFleet is b as boxes.yaml of fleet would declare it.
func inFleet(b spec.Box, fleet string) spec.Box {
	b.Fleet = fleet
	return b
}

// unlabelled strips the fleet label from box name's resources, as boxes
// made before fleets existed have none.
func unlabelled(o *engine.Observed, name string) {
	for i := range o.Containers {
		if o.Containers[i].Box == name {
			o.Containers[i].Fleet = ""
		}
	}
	for i := range o.Volumes {
		if o.Volumes[i].Box == name {
			o.Volumes[i].Fleet = ""
		}
	}
	for i := range o.Networks {
		if o.Networks[i].Box == name {
			o.Networks[i].Fleet = ""
		}
	}
}

func TestNewPlanFleets(t *testing.T) {
	t.Run("another fleet's boxes are invisible", func(t *testing.T) {
		o := emptyObserved()
		observeBox(t, o, inFleet(testBox("theirs"), "team-b"), testImage, "running", 0)
		observeBox(t, o, testBox("web"), testImage, "running", 0)
		p, err := reconcile.NewPlan(reconcile.Input{Config: testCfg(testBox("web")), Image: testImage, Observed: obsMap(o), Tokens: map[string]string{"web": testToken}})
		if err != nil {
			t.Fatal(err)
		}
		want := []reconcile.BoxPlan{{Name: "web", Action: reconcile.NoOp, State: spec.Running, HostPort: autoPort}}
		if !reflect.DeepEqual(p.Boxes, want) {
			t.Errorf("boxes = %+v, want only web as a no-op", p.Boxes)
		}
	})
	t.Run("a name another fleet holds is an error naming it", func(t *testing.T) {
		o := emptyObserved()
		observeBox(t, o, inFleet(testBox("web"), "team-b"), testImage, "running", 0)
		_, err := reconcile.NewPlan(reconcile.Input{Config: testCfg(testBox("web")), Image: testImage, Observed: obsMap(o), Tokens: map[string]string{"web": testToken}})
		if !errors.Is(err, reconcile.ErrHeldByFleet) {
			t.Fatalf("err = %v, want ErrHeldByFleet", err)
		}
		if !strings.Contains(err.Error(), "box web is fleet team-b's on the local engine") {
			t.Errorf("err %q does not name the box, the fleet and the engine", err)
		}
	})
	t.Run("the same name on another engine is no conflict", func(t *testing.T) {
		o := emptyObserved()
		observeBox(t, o, inFleet(testBox("web"), "team-b"), testImage, "running", 0)
		far := testBox("web")
		far.Host = "far"
		obs := map[string]*engine.Observed{"": o, "far": emptyObserved()}
		p, err := reconcile.NewPlan(reconcile.Input{Config: testCfg(far), Image: testImage, Observed: obs})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Boxes) != 1 || p.Boxes[0].Action != reconcile.Create || p.Boxes[0].Host != "far" {
			t.Errorf("boxes = %+v, want web created on far", p.Boxes)
		}
	})
	t.Run("a box made before fleets belongs to the fleet declaring it", func(t *testing.T) {
		o := emptyObserved()
		observeBox(t, o, testBox("web"), testImage, "running", 0)
		unlabelled(o, "web")
		p, err := reconcile.NewPlan(reconcile.Input{Config: testCfg(testBox("web")), Image: testImage, Observed: obsMap(o), Tokens: map[string]string{"web": testToken}})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Boxes) != 1 || p.Boxes[0].Action != reconcile.NoOp {
			t.Errorf("boxes = %+v, want web as a no-op", p.Boxes)
		}
	})
	t.Run("a box made before fleets that no fleet declares is left alone", func(t *testing.T) {
		o := emptyObserved()
		observeBox(t, o, testBox("legacy"), testImage, "running", 0)
		unlabelled(o, "legacy")
		p, err := reconcile.NewPlan(reconcile.Input{Config: testCfg(), Image: testImage, Observed: obsMap(o)})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Boxes) != 0 {
			t.Errorf("boxes = %+v, want nothing planned for legacy", p.Boxes)
		}
		in := reconcile.Input{Config: testCfg(), Image: testImage, Observed: obsMap(o), Target: map[string]bool{"legacy": true}}
		if _, err := reconcile.NewPlan(in); err == nil {
			t.Error("--target legacy planned a box the fleet does not own")
		}
	})
	t.Run("an undeclared box half labelled by this fleet is deleted whole", func(t *testing.T) {
		o := emptyObserved()
		observeBox(t, o, testBox("old"), testImage, "running", 0)
		for i := range o.Volumes { // volumes from before fleets, containers recreated since
			o.Volumes[i].Fleet = ""
		}
		p, err := reconcile.NewPlan(reconcile.Input{Config: testCfg(), Image: testImage, Observed: obsMap(o)})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Boxes) != 1 || p.Boxes[0].Action != reconcile.Delete || len(p.Boxes[0].Delete.Volumes) != 2 {
			t.Errorf("boxes = %+v, want old deleted with both volumes", p.Boxes)
		}
	})
	t.Run("a snapshot for a fleet drops only other fleets", func(t *testing.T) {
		o := emptyObserved()
		observeBox(t, o, inFleet(testBox("theirs"), "team-b"), testImage, "running", 0)
		observeBox(t, o, testBox("web"), testImage, "running", 0)
		observeBox(t, o, testBox("legacy"), testImage, "running", 0)
		unlabelled(o, "legacy")
		if got := o.ForFleet(testFleet).Boxes(); !reflect.DeepEqual(got, []string{"legacy", "web"}) {
			t.Errorf("ForFleet boxes = %v", got)
		}
	})
}

// An interrupted recreate leaves the new container under compose's
// temporary name beside the old one: the plan lists it, to be removed first.
func TestRecreateListsStrays(t *testing.T) {
	b := testBox("alpha")
	o := emptyObserved()
	observeBox(t, o, b, testImage, "running", 0)
	stray := o.Containers[0]
	stray.ID, stray.Name, stray.State = "id-stray", "0123abcd_"+stray.Name, "created"
	o.Containers = append(o.Containers, stray)
	p, err := reconcile.NewPlan(reconcile.Input{Config: testCfg(b), Image: testImage, Observed: obsMap(o), Tokens: map[string]string{"alpha": testToken}})
	if err != nil {
		t.Fatal(err)
	}
	bp := p.Boxes[0]
	if bp.Action != reconcile.Recreate || len(bp.Strays) != 1 || bp.Strays[0] != (reconcile.NamedID{Name: stray.Name, ID: "id-stray"}) {
		t.Fatalf("plan %+v", bp)
	}
}

// openDoor is the door of a box declared with no egress:, private: or
// credentials: of its own: every public address, nothing private.
var openDoor = &reconcile.Door{Egress: "open", Allow: []string{}, Private: []string{}, Credentials: []reconcile.DoorCredential{}}
