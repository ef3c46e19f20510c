package apply_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/hermes-box/boxes/apply"
	"github.com/hermes-box/boxes/reconcile"
)

func TestApplierRemovesStrayNetworksBeforeRecreating(t *testing.T) {
	a, j, _ := newApplier(t, testBox("alpha"))
	if err := a.Tokens.Put("alpha", testToken); err != nil {
		t.Fatal(err)
	}
	p := &reconcile.Plan{Image: testImage, Boxes: []reconcile.BoxPlan{{
		Name: "alpha", Action: reconcile.Recreate,
		Strays:        []reconcile.NamedID{{Name: "hbl-alpha-executor-1", ID: "alpha/executor"}},
		StrayNetworks: []reconcile.NamedID{{Name: "hbl-alpha_default", ID: "alpha/net2"}},
	}}}
	if err := a.Apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	want := []string{"rm container alpha/executor", "rm network alpha/net2", "record", "create --force", "start " + testImage, "ready", "init", "done"}
	if got := j.of("alpha"); !reflect.DeepEqual(got, want) {
		t.Errorf("steps %q, want %q", got, want)
	}
}

// A box's failure on another host names the host, once.
func TestBoxErrorNamesTheHost(t *testing.T) {
	for _, tc := range []struct {
		e    apply.BoxError
		want string
	}{
		{apply.BoxError{Box: "alpha", Err: errors.New("boom")}, "alpha: boom"},
		{apply.BoxError{Box: "alpha", Host: "far", Err: errors.New("boom")}, "alpha (host far): boom"},
		{apply.BoxError{Box: "alpha", Host: "far", Err: errors.New("host far (ssh://me@far): the engine stopped answering")}, "alpha: host far (ssh://me@far): the engine stopped answering"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
}
