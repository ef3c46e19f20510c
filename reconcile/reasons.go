package reconcile

import (
	"fmt"
	"strings"

	"github.com/hermes-box/boxes/compose"
)

// Reason says why a box gets its action. Kind is one of: new, restore, state,
// created, paused, stopped, frozen, image, config, missing, nocontainers, dead,
// restarting, exited, network, disconnected, published, volume, duplicate,
// renamed, networks, replace, token, undeclared, incomplete, door, credential,
// machine.
type Reason struct {
	Kind    string `json:"kind"`
	Service string `json:"service,omitempty"`
	Field   string `json:"field,omitempty"`
	Old     string `json:"old,omitempty"`
	New     string `json:"new,omitempty"`
	// ExitCode and Restarts describe a container that crashed (restarting, exited).
	ExitCode int `json:"exit_code,omitempty"`
	Restarts int `json:"restarts,omitempty"`
}

func (r Reason) String() string {
	switch r.Kind {
	case "new":
		return "box is declared and has no resources"
	case "restore":
		return "seeded from " + r.New
	case "state":
		return fmt.Sprintf("state: %s → %s", r.Old, r.New)
	case "image":
		return fmt.Sprintf("image: %s → %s", ShortID(r.Old), ShortID(r.New))
	case "door":
		return fmt.Sprintf("the network door: the box gets its gate (egress: %s, private ranges closed) and the agent moves to a network with no route out", r.New)
	case "credential":
		if name, ok := strings.CutSuffix(r.Field, "/ca"); ok {
			return fmt.Sprintf("credential %s: its ca: file changed on this machine", name)
		}
		return fmt.Sprintf("credential %s: its value changed on this machine", r.Field)
	case "machine":
		return machineChange(r)
	case "config":
		switch r.Field {
		case "egress", "private", compose.ExecutorEgressKey, compose.ExecutorPrivateKey:
			return ruleChange(r.Field, r.Old, r.New)
		case compose.ExecutorDoorKey:
			return executorDoorChange(r.New != "")
		}
		if name, ok := strings.CutPrefix(r.Field, "credentials."); ok {
			return credentialChange(name, r.Old, r.New)
		}
		if r.Field == "" {
			return fmt.Sprintf("%s: compose configuration changed (config hash %s → %s)", r.Service, short(r.Old), short(r.New))
		}
		return fmt.Sprintf("%s: %s → %s", r.Field, orNone(r.Old), orNone(r.New))
	case "created":
		return fmt.Sprintf("%s: created, never started", r.Service)
	case "paused":
		return fmt.Sprintf("%s is paused", r.Service)
	case "stopped":
		return fmt.Sprintf("%s: stopped (exit %d) → running", r.Service, r.ExitCode)
	case "frozen":
		return "a save was cut short and left the box frozen (paused or quiesced): it is resumed"
	case "incomplete":
		if r.Field == "from" {
			return "fork incomplete: seeded again from " + FromText(r.New)
		}
		return "restore incomplete: seeded again from " + r.New
	case "fork":
		return "seeded from " + FromText(r.New)
	case "missing":
		return fmt.Sprintf("container %s is missing", r.Service)
	case "nocontainers":
		return "containers were never created, or were removed since (volumes kept)"
	case "restarting":
		return fmt.Sprintf("%s is restarting (%s)", r.Service, r.crash())
	case "exited":
		return fmt.Sprintf("%s exited on its own (%s)", r.Service, r.crash())
	case "network":
		return fmt.Sprintf("network %s is missing", r.Old)
	case "disconnected":
		return fmt.Sprintf("%s is not connected to network %s", r.Service, r.Old)
	case "published":
		return fmt.Sprintf("%s published on %s, declared %s", r.Service, orNone(r.Old), r.New)
	case "volume":
		if r.New != "" {
			return fmt.Sprintf("volume %s is missing: %s", r.Old, r.New)
		}
		return fmt.Sprintf("volume %s is missing", r.Old)
	case "dead":
		return fmt.Sprintf("container %s is %s", r.Service, r.Old)
	case "renamed":
		return fmt.Sprintf("%s is named %s, not %s (an interrupted recreate)", r.Service, r.Old, r.New)
	case "duplicate":
		return fmt.Sprintf("%s containers of %s (an interrupted recreate)", r.Old, r.Service)
	case "networks":
		return fmt.Sprintf("%s networks named %s (an interrupted create): the box keeps one, the others are removed", r.New, r.Old)
	case "replace":
		return "asked for with --replace"
	case "token":
		return "token not found in .boxes/secrets and not recoverable: a new one is minted"
	case "undeclared":
		return "box is no longer declared in boxes.yaml"
	case "pool":
		return fmt.Sprintf("pool %s keeps %s free boxes: this one is beyond its size", r.Old, r.New)
	}
	if s, ok := moveReason(r); ok {
		return s
	}
	return r.Kind
}

func (r Reason) crash() string {
	var parts []string
	// A loop caught while the container runs for an instant has no exit
	// code to show; a real exit 0 followed by restarts shows none either.
	if r.ExitCode != 0 || r.Restarts == 0 {
		parts = append(parts, fmt.Sprintf("exit %d", r.ExitCode))
	}
	if r.Old != "" {
		parts = append(parts, r.Old) // killed for memory, or Docker's start error
	}
	switch r.Restarts {
	case 0:
	case 1:
		parts = append(parts, "1 restart")
	default:
		parts = append(parts, fmt.Sprintf("%d restarts", r.Restarts))
	}
	return strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return orNone(h)
}

// ShortID is an image ID as people read it: the first 12 hex digits.
func ShortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	return short(id)
}

func HasKind(rs []Reason, kind string) bool {
	for _, r := range rs {
		if r.Kind == kind {
			return true
		}
	}
	return false
}
