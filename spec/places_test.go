package spec

import (
	"reflect"
	"testing"
)

// RulesAt names where each rule a box runs under is written: its own, or
// the defaults' or its pool's it inherits.
func TestRulesAt(t *testing.T) {
	src := `version: 1
defaults:
  egress: [api.example.com, "*.github.com"]
  private: ["192.168.1.10:5432"]
  credentials:
    gh: {to: api.github.com, header: Authorization, from: "env:GH"}
boxes:
  plain: {}
  own:
    egress:
      - registry.npmjs.org
    credentials:
      npm: {to: registry.npmjs.org, header: Authorization, from: "env:NPM"}
  opened:
    egress: open
    private: []
pools:
  scratch: {size: 1, egress: none}
`
	cfg, err := Parse("boxes.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	at := func(line, col int) Pos { return Pos{File: "boxes.yaml", Line: line, Col: col} }
	pool := Box{Name: "scratch-1", Pool: "scratch"}
	for _, tc := range []struct {
		box  Box
		want RulePlaces
	}{
		{box(t, cfg, "plain"), RulePlaces{Egress: at(3, 11), Allow: []Pos{at(3, 12), at(3, 29)}, Private: []Pos{at(4, 13)},
			Credentials: map[string]Pos{"gh": at(6, 5)}}},
		{box(t, cfg, "own"), RulePlaces{Egress: at(11, 7), Allow: []Pos{at(11, 9)}, Private: []Pos{at(4, 13)},
			Credentials: map[string]Pos{"gh": at(6, 5), "npm": at(13, 7)}}},
		{box(t, cfg, "opened"), RulePlaces{Egress: at(15, 13), Allow: []Pos{}, Private: []Pos{},
			Credentials: map[string]Pos{"gh": at(6, 5)}}},
		{pool, RulePlaces{Egress: at(18, 30), Allow: []Pos{}, Private: []Pos{at(4, 13)}, Credentials: map[string]Pos{"gh": at(6, 5)}}},
		{Box{Name: "elsewhere"}, RulePlaces{Credentials: map[string]Pos{}}},
	} {
		if got := cfg.RulesAt(tc.box); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("RulesAt(%s) = %+v\nwant %+v", tc.box.Name, got, tc.want)
		}
	}
}

func box(t *testing.T, cfg *Config, name string) Box {
	t.Helper()
	b, ok := cfg.Box(name)
	if !ok {
		t.Fatalf("no box %s", name)
	}
	return b
}
