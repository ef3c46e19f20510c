package spec

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
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
  #   # egress: under executor: puts the executor behind the gate too,
  #   # with rules of its own: executor: {port: 4800, egress: [api.github.com]}
  #   # The network door: the gate lets beta reach only these (default: every
  #   # public address); private ranges and this machine stay closed unless
  #   # private: opens one. API keys stay here: the gate adds them.
  #   egress: [api.anthropic.com, "*.github.com", registry.npmjs.org]
  #   private: ["192.168.1.10:5432"]
  #   credentials:
  #     anthropic: {to: api.anthropic.com, header: x-api-key, from: "env:ANTHROPIC_API_KEY"}

# A pool: boxes kept ready and lent one at a time (boxes lease scratch),
# each made anew, its data gone, when it is given back (boxes release).
# pools:
#   scratch: {size: 2, memory: 4GiB, egress: [api.anthropic.com]}
`

// Scaffold is the starter boxes.yaml that boxes init writes for fleet.

// credentialFromPattern is what a credential's from: may be, for the
// schema: env:NAME, file:PATH, or cmd: and one line of command.
const credentialFromPattern = `^(env:[A-Za-z_][A-Za-z0-9_]*|file:.+|cmd:[^\x00-\x08\x0a-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x08\x0a-\x1f\x7f]*)$`

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
	destination := map[string]any{
		"type":        "string",
		"description": "A host name (api.github.com), a wildcard (\"*.github.com\": every name under github.com, but not github.com itself), an IP address or a CIDR range (10.0.0.0/8), each with an optional :port (api.github.com:443, [2001:db8::1]:443, 10.0.0.0/8:5432).",
	}
	credential := map[string]any{
		"type": "object", "additionalProperties": false,
		"required": []any{"to", "header", "from"},
		"properties": map[string]any{
			"to": map[string]any{
				"type":        "string",
				"description": "The one host name or IP address, with an optional :port, whose requests get the header; not a wildcard or a range.",
			},
			"header": map[string]any{
				"type": "string", "pattern": headerNamePattern.String(),
				"not":         map[string]any{"pattern": refusedHeadersPattern()},
				"description": "The HTTP header the gate sets, e.g. x-api-key or Authorization; not " + strings.Join(headersRefused[:len(headersRefused)-1], ", ") + " or " + headersRefused[len(headersRefused)-1] + ".",
			},
			"prefix": map[string]any{"type": "string", "description": "Text put before the value, e.g. \"Bearer \"."},
			"from": map[string]any{
				"type": "string", "pattern": credentialFromPattern,
				"description": "Where the value is read on the machine running boxes: env:NAME, an environment variable; file:PATH, a file (~/ is the home directory; a relative path is relative to boxes.yaml's directory); or cmd:COMMAND, what a command prints (run by sh -c in boxes.yaml's directory, within 30 s; one trailing line break dropped). The value itself never goes in boxes.yaml.",
			},
			"ca": map[string]any{
				"type": "string", "pattern": `^file:(~/|[^~]).*$`,
				"description": "file:PATH, a PEM file (read on the machine running boxes, as from: is) of the certificates the destination's certificate must chain to, in place of the system's roots.",
			},
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
		"egress": map[string]any{
			"description": "Where the box's agent may connect, through the box's gate: open (the default: any public address), none, or a list of destinations. Private ranges stay closed whatever it says, but for private:. Set on a box, it replaces the defaults' egress entirely.",
			"oneOf":       []any{map[string]any{"enum": []any{"open", "none"}}, map[string]any{"type": "array", "minItems": 1, "uniqueItems": true, "items": destination}},
		},
		"private": map[string]any{
			"description": "Exceptions to the private ranges the gate closes (RFC 1918, 100.64.0.0/10, 169.254.0.0/16, loopback, IPv6 unique-local and link-local, the engine machine's addresses), as destinations, e.g. \"192.168.1.10:5432\". Set on a box, it replaces the defaults' list entirely.",
			"type":        "array", "uniqueItems": true, "items": destination,
		},
		"credentials": map[string]any{
			"description":          "Headers the gate adds to the requests it forwards to one destination, by name (lower-case letters, digits and -, starting with a letter). A box's credential replaces the defaults' one of the same name; it inherits the others.",
			"type":                 "object",
			"propertyNames":        map[string]any{"pattern": credentialNamePattern().String()},
			"additionalProperties": credential,
		},
		"dns": map[string]any{
			"description": "IP addresses of the name servers the box's gate resolves names with; by default the engine's. Set on a box, it replaces the defaults' list entirely.",
			"type":        "array", "uniqueItems": true,
			"items": map[string]any{"type": "string", "anyOf": []any{map[string]any{"format": "ipv4"}, map[string]any{"format": "ipv6"}}},
		},
	}
	executorProps := executor["properties"].(map[string]any)
	executorProps["egress"] = map[string]any{
		"description": "Gives the executor its door: it then reaches out only through the box's gate, under these rules, read as the agent's egress: (open, none, or a list of destinations), and the gate publishes its port. Without it the executor keeps its own network access. Set on a box, it replaces the defaults' executor egress.",
		"oneOf":       settings["egress"].(map[string]any)["oneOf"],
	}
	executorProps["private"] = map[string]any{
		"description": "Exceptions to the private ranges the gate closes to the executor, as private: is for the agent; only with executor egress:. Set on a box, it replaces the defaults' list entirely.",
		"type":        "array", "uniqueItems": true, "items": destination,
	}
	boxProps := map[string]any{
		"state":   map[string]any{"enum": []any{"running", "stopped"}},
		"restore": map[string]any{"type": "string"},
		"from": map[string]any{"description": "The box (alpha: its /data as it is at create) or snapshot (alpha@LABEL) that seeds the box when it is created, on its engine.",
			"type": "string", "pattern": fromPattern(false)},
		"host": map[string]any{"type": "string"},
	}
	poolProps := map[string]any{
		"size": map[string]any{"type": "integer", "minimum": 0, "maximum": MaxPoolSize},
		"host": map[string]any{"type": "string"},
		"from": map[string]any{"description": "The snapshot (BOX@LABEL) the pool's boxes are made from and reset to.",
			"type": "string", "pattern": fromPattern(true)},
	}
	for k, v := range settings {
		boxProps[k] = v
		poolProps[k] = v
	}
	s := map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"title":                "boxes.yaml",
		"type":                 "object",
		"additionalProperties": false,
		"required":             []any{"version"},
		"properties": map[string]any{
			"version":  map[string]any{"const": 1},
			"fleet":    map[string]any{"type": "string", "pattern": fleetNamePattern().String()},
			"defaults": map[string]any{"type": "object", "additionalProperties": false, "properties": settings},
			"boxes": map[string]any{
				"type":                 []any{"object", "null"},
				"propertyNames":        map[string]any{"pattern": boxNamePattern().String()},
				"additionalProperties": map[string]any{"type": []any{"object", "null"}, "additionalProperties": false, "properties": boxProps},
			},
			"pools": map[string]any{
				"type":          []any{"object", "null"},
				"propertyNames": map[string]any{"pattern": poolNamePattern().String()},
				"additionalProperties": map[string]any{
					"type": "object", "additionalProperties": false, "required": []any{"size"}, "properties": poolProps,
				},
			},
			"hosts": map[string]any{
				"type": "object",
				"additionalProperties": map[string]any{
					"type": "object", "additionalProperties": false,
					"properties": map[string]any{
						"docker": map[string]any{"type": "string", "pattern": "^(ssh|tcp|unix)://"}, "context": map[string]any{"type": "string"}, "tls": map[string]any{"type": "string"},
						"kubernetes": map[string]any{
							"type": "object", "additionalProperties": false, "required": []any{"context", "namespace"},
							"properties": map[string]any{"context": map[string]any{"type": "string"}, "namespace": map[string]any{"type": "string", "pattern": namespacePattern().String()}, "kubeconfig": map[string]any{"type": "string"}},
						},
					},
					"oneOf": []any{map[string]any{"required": []any{"docker"}}, map[string]any{"required": []any{"context"}}, map[string]any{"required": []any{"kubernetes"}}},
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

// refusedHeadersPattern matches the headers a credential cannot set, in any
// case, in the regular expressions of JSON Schema, which have no (?i).
func refusedHeadersPattern() string {
	alts := make([]string, len(headersRefused))
	for i, h := range headersRefused {
		var b strings.Builder
		for _, r := range h {
			if lower, upper := unicode.ToLower(r), unicode.ToUpper(r); lower != upper {
				fmt.Fprintf(&b, "[%c%c]", upper, lower)
			} else {
				b.WriteRune(r)
			}
		}
		alts[i] = b.String()
	}
	return "^(" + strings.Join(alts, "|") + ")$"
}
