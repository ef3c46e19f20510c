package reconcile

import (
	"reflect"
	"testing"

	"github.com/hermes-box/boxes/internal/hint"
)

func TestUnconfirmedError(t *testing.T) {
	err := UnconfirmedError([]string{"a", "b"})
	if want := "the plan deletes a, b with its volumes, and there is no terminal to confirm it; nothing was changed"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if got, want := hint.Lines(err), []string{"pass --confirm-delete a --confirm-delete b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("hints = %q, want %q", got, want)
	}
}

func TestMovesToConfirm(t *testing.T) {
	p := &Plan{Boxes: []BoxPlan{
		{Name: "kept", Action: Move, Move: &Moving{From: "a", To: "b"}},
		{Name: "gone", Action: Move, Move: &Moving{From: "a", To: "b"}},
		{Name: "new", Action: Create},
		{Name: "del", Action: Delete},
	}}
	yes, undecided := p.MovesToConfirm([]string{"gone", "del", "new"})
	if want := map[string]bool{"gone": true}; !reflect.DeepEqual(yes, want) {
		t.Errorf("confirmed = %v, want %v", yes, want)
	}
	if len(undecided) != 1 || undecided[0].Name != "kept" {
		t.Errorf("undecided = %+v, want only kept", undecided)
	}
	if yes, undecided := (&Plan{}).MovesToConfirm(nil); len(yes) != 0 || yes == nil || undecided != nil {
		t.Errorf("no moves: %v %v, want an empty map and none undecided", yes, undecided)
	}
}

func TestHeld(t *testing.T) {
	p := &Plan{Boxes: []BoxPlan{{Name: "a", Action: Stop}, {Name: "b", Action: NoOp}}}
	if got, want := p.Held(), map[string]bool{"a": true, "b": true}; !reflect.DeepEqual(got, want) {
		t.Errorf("Held = %v, want %v", got, want)
	}
}

func TestNotDeleted(t *testing.T) {
	p := &Plan{Boxes: []BoxPlan{
		{Name: "moved", Action: Move, Move: &Moving{From: "a", To: "b"}},
		{Name: "new", Action: Create},
		{Name: "del", Action: Delete},
	}}
	got := p.NotDeleted([]string{"del", "new", "moved", "nowhere", "new"})
	if want := []string{"new", "nowhere"}; !reflect.DeepEqual(got, want) {
		t.Errorf("NotDeleted = %q, want %q", got, want)
	}
}
