package spec

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
)

func TestScaffoldParses(t *testing.T) {
	cfg, err := Parse("boxes.yaml", Scaffold("team-a"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Boxes) != 1 || cfg.Boxes[0].Name != "alpha" {
		t.Errorf("scaffold boxes = %+v", cfg.Boxes)
	}
}

func TestSchemaMatchesParserKeys(t *testing.T) {
	var s struct {
		Properties map[string]struct {
			Properties           map[string]any `json:"properties"`
			AdditionalProperties any            `json:"additionalProperties"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(Schema(), &s); err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	if got := keys(s.Properties); !equal(got, sorted(topKeys)) {
		t.Errorf("schema top keys %v, parser %v", got, sorted(topKeys))
	}
	if got := keysAny(s.Properties["defaults"].Properties); !equal(got, sorted(settingKeys)) {
		t.Errorf("schema defaults keys %v, parser %v", got, sorted(settingKeys))
	}
	// The schema bounds the numbers as the parser does.
	cpus := s.Properties["defaults"].Properties["cpus"].(map[string]any)
	if cpus["minimum"] != MinCPUs || cpus["maximum"] != float64(MaxCPUs) {
		t.Errorf("schema cpus %v, parser %v to %v", cpus, MinCPUs, MaxCPUs)
	}
	box := s.Properties["boxes"].AdditionalProperties.(map[string]any)["properties"].(map[string]any)
	if got := keysAny(box); !equal(got, sorted(boxKeys)) {
		t.Errorf("schema box keys %v, parser %v", got, sorted(boxKeys))
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func keysAny(m map[string]any) []string { return keys(m) }

func sorted(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestScaffoldNamesFleet(t *testing.T) {
	cfg, err := Parse("boxes.yaml", Scaffold("team-a"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Fleet != "team-a" || cfg.FleetImplied {
		t.Errorf("Fleet = %q (implied %v), want team-a", cfg.Fleet, cfg.FleetImplied)
	}
	if cfg.Boxes[0].Fleet != "team-a" {
		t.Errorf("box fleet = %q", cfg.Boxes[0].Fleet)
	}
}

func TestFleetFromDir(t *testing.T) {
	for path, want := range map[string]string{
		"/srv/team-a/boxes.yaml":    "team-a",
		"/srv/My Boxes!/boxes.yaml": "My-Boxes-",
		"/srv/.hidden/boxes.yaml":   "hidden",
		"/boxes.yaml":               "default",
	} {
		if got := FleetFromDir(path); got != want {
			t.Errorf("FleetFromDir(%q) = %q, want %q", path, got, want)
		}
	}
	cfg, err := Parse("/srv/team-b/boxes.yaml", []byte("version: 1\nboxes: {a: {}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Fleet != "team-b" || !cfg.FleetImplied {
		t.Errorf("Fleet = %q (implied %v), want team-b implied", cfg.Fleet, cfg.FleetImplied)
	}
	if _, err := Parse("boxes.yaml", []byte("version: 1\nfleet: -bad\n")); err == nil || !strings.Contains(err.Error(), "boxes.yaml:2:8: bad fleet name") {
		t.Errorf("bad fleet: err = %v", err)
	}
}
