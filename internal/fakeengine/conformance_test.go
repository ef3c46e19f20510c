package fakeengine_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/conformance"
	"github.com/hermes-box/boxes/internal/fakeengine"
	"github.com/hermes-box/boxes/spec"
)

// TestConformance holds the fake engine to the engine contract's suite,
// the one the Docker engine passes (TestIntegrationConformance): the
// command line's scripts run on it as they would on Docker.
func TestConformance(t *testing.T) {
	state := filepath.Join(t.TempDir(), "engines.json")
	image := "sha256:" + strings.Repeat("cd", 32)
	if err := fakeengine.Edit(state, func(s *fakeengine.State) error { s.AddImage("", image); return nil }); err != nil {
		t.Fatal(err)
	}
	c := &fakeengine.Connector{Path: state}
	connect := func(t *testing.T, c *fakeengine.Connector) engine.Engine {
		t.Helper()
		e, err := c.Connect(t.Context(), spec.Host{})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	behind := func(t *testing.T, fn func(*fakeengine.State) error) {
		t.Helper()
		if err := c.Edit(fn); err != nil {
			t.Fatal(err)
		}
	}
	conformance.Run(t, conformance.Harness{
		Engine: func(t *testing.T) engine.Engine { return connect(t, c) },
		Image:  image,
		StopBehind: func(t *testing.T, box string) {
			behind(t, func(s *fakeengine.State) error { return s.StopBehind(box) })
		},
		RemoveBehind: func(t *testing.T, box, service string) {
			behind(t, func(s *fakeengine.State) error { return s.RemoveBehind(box, service) })
		},
		// A second connector to the same state, gone alone: as a
		// connection to an engine lost while others still reach it.
		Gone: func(t *testing.T) (engine.Engine, func()) {
			other := &fakeengine.Connector{Path: state}
			return connect(t, other), func() { other.Gone("") }
		},
		// Whatever the suite left is in the state file of this test alone.
		Cleanup: func(*testing.T, []string) {},
	})
}
