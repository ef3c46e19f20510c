package pins

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/spec"
)

func TestSelect(t *testing.T) {
	if got, _ := Select(nil); !reflect.DeepEqual(got, spec.PinNames) {
		t.Errorf("no names: %q", got)
	}
	if got, _ := Select([]string{"uv", "base", "uv"}); !reflect.DeepEqual(got, []string{"uv", "base"}) {
		t.Errorf("got %q", got)
	}
	var unknown *UnknownPinError
	if _, err := Select([]string{"python"}); !errors.As(err, &unknown) || unknown.Name != "python" {
		t.Errorf("unknown pin: %v", err)
	}
}

func TestHas(t *testing.T) {
	p := spec.Pins{Hermes: spec.ToolPin{Version: "main"}, UV: spec.ToolPin{Version: "0.5.4"}, Base: spec.BasePin{Image: "ubuntu:24.04"}}
	for name, want := range map[string]bool{"hermes": true, "uv": false, "base": false, "node": false} {
		if got := Has(p, name); got != want {
			t.Errorf("Has(%s) = %v", name, got)
		}
	}
}

func TestUpdateBase(t *testing.T) {
	digest := "sha256:" + strings.Repeat("a", 64)
	cur := spec.Pins{Base: spec.BasePin{Image: "ubuntu:24.04@sha256:old", Digest: "sha256:old"}}
	var asked string
	got, changes, err := (&Resolver{}).Update(context.Background(), cur, []string{"base"}, func(_ context.Context, image string) (string, error) {
		asked = image
		return digest, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if asked != "ubuntu:24.04" || got.Base != (spec.BasePin{Image: "ubuntu:24.04", Digest: digest}) {
		t.Errorf("asked %q, got %+v", asked, got.Base)
	}
	if len(changes) != 1 || !changes[0].Changed || changes[0].Old != "sha256:old" {
		t.Errorf("changes %+v", changes)
	}
	_, _, err = (&Resolver{}).Update(context.Background(), spec.Pins{}, []string{"base"}, func(context.Context, string) (string, error) {
		return "", errors.New("offline")
	})
	if err == nil || err.Error() != "base: offline" {
		t.Errorf("a failing base: %v", err)
	}
}
