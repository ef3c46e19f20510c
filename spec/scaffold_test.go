package spec

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

// The commented examples boxes init writes (beta with its network door,
// a pool) are valid boxes.yaml once uncommented, so a new user who takes
// them gets what they show.
func TestScaffoldExamplesParse(t *testing.T) {
	var lines []string
	for _, l := range strings.Split(string(Scaffold("team-a")), "\n") {
		switch {
		case strings.HasPrefix(l, "  # ") && !strings.HasPrefix(strings.TrimPrefix(l, "  # "), " "):
			lines = append(lines, "  "+strings.TrimPrefix(l, "  # "))
		case strings.HasPrefix(l, "  #   "):
			lines = append(lines, "  "+strings.TrimPrefix(l, "  # "))
		case l == "# pools:" || strings.HasPrefix(l, "#   "):
			lines = append(lines, strings.TrimPrefix(l, "# "))
		default:
			lines = append(lines, l)
		}
	}
	src := strings.Join(lines, "\n")
	cfg, err := Parse("boxes.yaml", []byte(src))
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	beta, ok := cfg.Box("beta")
	if !ok || len(beta.Egress.Allow) != 3 || len(beta.Private) != 1 || len(beta.Credentials) != 1 {
		t.Errorf("beta as uncommented: %+v\n%s", beta, src)
	}
	if len(cfg.Pools) != 1 || cfg.Pools[0].Name != "scratch" || cfg.Pools[0].Size != 2 {
		t.Errorf("pools as uncommented: %+v", cfg.Pools)
	}
}

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

// The schema editors check boxes.yaml with is a valid JSON Schema, takes
// what the parser takes, and refuses what it can of what the parser refuses.
func TestSchemaValidates(t *testing.T) {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("boxes.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("boxes.schema.json")
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	validate := func(src string) error {
		var v any
		if err := yaml.Unmarshal([]byte(src), &v); err != nil {
			t.Fatal(err)
		}
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
		if err != nil {
			t.Fatal(err)
		}
		return schema.Validate(inst)
	}
	for _, src := range []string{string(Scaffold("team-a")), networkExample, executorExample} {
		if _, err := Parse("boxes.yaml", []byte(src)); err != nil {
			t.Fatal(err)
		}
		if err := validate(src); err != nil {
			t.Errorf("the schema refuses what the parser takes: %v\n%s", err, src)
		}
	}
	for _, box := range []string{
		`{egress: []}`,
		`{egress: closed}`,
		`{egress: [a.com, a.com]}`,
		`{private: 10.0.0.1}`,
		`{executor: {egress: []}}`,
		`{executor: {egress: closed}}`,
		`{executor: {egress: open, private: 10.0.0.1}}`,
		`{executor: {egress: [a.com, a.com]}}`,
		`{dns: [dns.google]}`,
		`{credentials: {X: {to: a.com, header: x-api-key, from: "env:A"}}}`,
		`{credentials: {x: {to: a.com, header: x-api-key, from: "env:A", value: s}}}`,
		`{credentials: {x: {to: a.com, header: x-api-key}}}`,
		`{credentials: {x: {to: a.com, header: "x api key", from: "env:A"}}}`,
		`{credentials: {x: {to: a.com, header: content-LENGTH, from: "env:A"}}}`,
		`{credentials: {x: {to: a.com, header: x-api-key, from: "sk-ant-1"}}}`,
		`{credentials: {x: {to: a.com, header: x-api-key, from: "env:1A"}}}`,
	} {
		src := "version: 1\nboxes:\n  a: " + box + "\n"
		if _, err := Parse("boxes.yaml", []byte(src)); err == nil {
			t.Errorf("the parser takes %s", box)
		}
		if err := validate(src); err == nil {
			t.Errorf("the schema takes %s", box)
		}
	}
}
