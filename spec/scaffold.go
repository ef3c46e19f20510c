package spec

import (
	"encoding/json"
	"fmt"
)

const scaffold = `# boxes.yaml: the boxes you want, reviewed in pull requests.
# boxes plan shows what would change; boxes apply makes it so.
version: 1
# One boxes.yaml is one fleet: several fleets can share a Docker engine, and
# a plan only ever touches its own fleet's boxes.
fleet: %s

defaults:
  cpus: 2
  memory: 4GiB
  executor: {bind: 127.0.0.1, port: auto}

boxes:
  alpha: {}
  # beta:
  #   state: stopped            # running (default) | stopped
  #   memory: 8GiB
  #   env: {TZ: Europe/Berlin}
  #   executor: {port: 4800}    # a fixed host port instead of auto
`

// Scaffold is the starter boxes.yaml that boxes init writes for fleet.
func Scaffold(fleet string) []byte { return fmt.Appendf(nil, scaffold, fleet) }

// Schema is a JSON Schema of boxes.yaml, built from the parser's own key lists.
func Schema() []byte {
	size := map[string]any{"type": "string", "pattern": `^[0-9]+(\.[0-9]+)?\s*([kKmMgGtT]([iI]?[bB])?|[bB])?$`}
	executor := map[string]any{
		"type": "object", "additionalProperties": false,
		"properties": map[string]any{
			"bind": map[string]any{"type": "string", "anyOf": []any{map[string]any{"format": "ipv4"}, map[string]any{"format": "ipv6"}}},
			"port": map[string]any{"oneOf": []any{map[string]any{"const": "auto"}, map[string]any{"type": "integer", "minimum": 1, "maximum": 65535}}},
		},
	}
	settings := map[string]any{
		"cpus":     map[string]any{"type": "number", "minimum": MinCPUs, "maximum": MaxCPUs},
		"memory":   map[string]any{"oneOf": []any{size, map[string]any{"type": "integer", "minimum": MinMemory, "maximum": MaxMemory}}},
		"executor": executor,
		"runtime":  map[string]any{"type": "string"},
		"env": map[string]any{
			"type":                 "object",
			"propertyNames":        map[string]any{"pattern": envNamePattern.String()},
			"additionalProperties": map[string]any{"type": []any{"string", "number", "boolean"}},
		},
	}
	boxProps := map[string]any{
		"state":   map[string]any{"enum": []any{"running", "stopped"}},
		"restore": map[string]any{"type": "string"},
		"host":    map[string]any{"type": "string"},
	}
	for k, v := range settings {
		boxProps[k] = v
	}
	s := map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"title":                "boxes.yaml",
		"type":                 "object",
		"additionalProperties": false,
		"required":             []any{"version"},
		"properties": map[string]any{
			"version":  map[string]any{"const": 1},
			"fleet":    map[string]any{"type": "string", "pattern": fleetNamePattern.String()},
			"defaults": map[string]any{"type": "object", "additionalProperties": false, "properties": settings},
			"boxes": map[string]any{
				"type":                 []any{"object", "null"},
				"propertyNames":        map[string]any{"pattern": boxNamePattern.String()},
				"additionalProperties": map[string]any{"type": []any{"object", "null"}, "additionalProperties": false, "properties": boxProps},
			},
			"hosts": map[string]any{
				"type": "object",
				"additionalProperties": map[string]any{
					"type": "object", "additionalProperties": false,
					"properties": map[string]any{"docker": map[string]any{"type": "string", "pattern": "^(ssh|tcp|unix)://"}, "context": map[string]any{"type": "string"}, "tls": map[string]any{"type": "string"}},
					"oneOf":      []any{map[string]any{"required": []any{"docker"}}, map[string]any{"required": []any{"context"}}},
				},
			},
			"archive": map[string]any{
				"type": "object", "additionalProperties": false,
				"properties": map[string]any{"recipients": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}},
			},
		},
	}
	out, _ := json.MarshalIndent(s, "", "  ") // maps of plain values always marshal
	return append(out, '\n')
}
