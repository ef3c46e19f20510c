package reconcile

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/hermes-box/boxes/compose"
	"github.com/hermes-box/boxes/engine"
	"github.com/hermes-box/boxes/internal/text"
	"github.com/hermes-box/boxes/spec"
)

// doorReason says a box made before the network door gets it: its agent is
// still on the network with a route out and it has no gate. The gate and the
// inside network are made, and the agent and executor remade on them.
func doorReason(b spec.Box, r engine.Resources) (Reason, bool) {
	agent, ok := r.Container(compose.AgentService)
	if !ok {
		return Reason{}, false
	}
	if _, gated := r.Container(compose.GateService); gated {
		return Reason{}, false
	}
	if contains(agent.Networks, compose.InsideNetworkName(b.Name)) {
		return Reason{}, false
	}
	return Reason{Kind: "door", New: compose.Settings(b)["egress"]}, true
}

// credentialReasons name the credentials whose values on this machine differ
// from those gate c was made with (by digest: the values are never shown).
func credentialReasons(in Input, b spec.Box, c engine.Container) []Reason {
	have := map[string]string{}
	_ = json.Unmarshal([]byte(c.Labels[compose.CredentialsLabel]), &have) // unreadable: every value reads as changed
	var out []Reason
	for name, digest := range compose.CredentialDigests(b, in.Doors[b.Name]) {
		if have[name] != digest {
			out = append(out, Reason{Kind: "credential", Service: compose.GateService, Field: name})
		}
	}
	slices.SortFunc(out, func(a, b Reason) int { return strings.Compare(a.Field, b.Field) })
	return out
}

// machineReasons name the addresses of the engine's machine that gate c
// leaves open (the machine gained them after the gate was made) and those
// it closes that the machine no longer has, against the machine's now. A
// gate that does not record them has none: what it closes is not known.
func machineReasons(in Input, b spec.Box, c engine.Container) []Reason {
	open, gone, _ := compose.MachineClosed(c.Labels, in.Doors[b.Name].Closed)
	var out []Reason
	if len(open) > 0 {
		out = append(out, Reason{Kind: "machine", Service: compose.GateService, Field: "added", New: strings.Join(open, ", ")})
	}
	if len(gone) > 0 {
		out = append(out, Reason{Kind: "machine", Service: compose.GateService, Field: "removed", Old: strings.Join(gone, ", ")})
	}
	return out
}

// machineChange renders a machine reason.
func machineChange(r Reason) string {
	switch r.Field {
	case "added":
		addrs := strings.Split(r.New, ", ")
		if len(addrs) == 1 {
			return fmt.Sprintf("the engine's machine has a new address %s: the gate must close it", compose.Addresses(addrs))
		}
		return fmt.Sprintf("the engine's machine has new addresses %s: the gate must close them", compose.Addresses(addrs))
	case "removed":
		addrs := strings.Split(r.Old, ", ")
		if len(addrs) == 1 {
			return fmt.Sprintf("the engine's machine no longer has address %s: the gate need not close it", compose.Addresses(addrs))
		}
		return fmt.Sprintf("the engine's machine no longer has addresses %s: the gate need not close them", compose.Addresses(addrs))
	}
	return "the gate does not record which addresses of the engine's machine it closes (made by an earlier boxes): it is remade once to record them"
}

// ruleChange renders a change of egress or private: each side summed up
// ("open", "none", "3 destinations"), then what was added and removed.
func ruleChange(field, old, new string) string {
	line := fmt.Sprintf("%s: %s → %s", field, ruleSummary(field, old), ruleSummary(field, new))
	was, now := ruleSet(old), ruleSet(new)
	var parts []string
	for _, d := range now {
		if !slices.Contains(was, d) {
			parts = append(parts, "+ "+d)
		}
	}
	for _, d := range was {
		if !slices.Contains(now, d) {
			parts = append(parts, "− "+d)
		}
	}
	if len(parts) > 0 {
		line += " (" + strings.Join(parts, ", ") + ")"
	}
	return line
}

// credentialChange renders a credential added, removed or changed (its
// header, destination or source: never its value).
func credentialChange(name, old, new string) string {
	switch {
	case old == "":
		return fmt.Sprintf("credential %s added: %s", name, new)
	case new == "":
		return fmt.Sprintf("credential %s removed (was %s)", name, old)
	}
	return fmt.Sprintf("credential %s: %s → %s", name, old, new)
}

// ruleSummary sums up one side of an egress or private change.
func ruleSummary(field, v string) string {
	switch v {
	case "open", "none":
		return v
	case "":
		switch field {
		case "egress":
			return "open"
		case compose.ExecutorEgressKey:
			return "open (no door)"
		}
		return "none"
	}
	if strings.HasSuffix(field, "private") {
		return text.Plural(len(ruleSet(v)), "exception", "exceptions")
	}
	return text.Plural(len(ruleSet(v)), "destination", "destinations")
}

// ruleSet is a settings value's destinations ("open" and "none" have none).
func ruleSet(v string) []string {
	if v == "" || v == "open" || v == "none" {
		return nil
	}
	return strings.Split(v, ", ")
}

// GateOnly reports whether every reason of a recreate or a start concerns
// the gate alone: the agent and the executor keep running.
func GateOnly(reasons []Reason) bool {
	if len(reasons) == 0 {
		return false
	}
	for _, r := range reasons {
		if !gateReason(r) {
			return false
		}
	}
	return true
}

func gateReason(r Reason) bool {
	switch {
	case r.Kind == "credential" || r.Kind == "machine":
	case r.Kind == "config" && (r.Service == compose.GateService || compose.IsGateKey(r.Field)):
	case r.Service == compose.GateService && slices.Contains([]string{"missing", "dead", "exited", "restarting", "stopped", "paused", "created"}, r.Kind):
	default:
		return false
	}
	return true
}

// ExecutorDoorOnly reports whether a recreate's reasons are the executor's
// door given or taken away, with what concerns the gate alone: the
// executor and the gate are remade, and the agent keeps running.
func ExecutorDoorOnly(reasons []Reason) bool {
	door := false
	for _, r := range reasons {
		switch {
		case r.Kind == "config" && r.Field == compose.ExecutorDoorKey:
			door = true
		case gateReason(r):
		default:
			return false
		}
	}
	return door
}

// executorDoorChange renders the executor's door given (on) or taken away.
func executorDoorChange(on bool) string {
	if on {
		return "the executor's door: the executor moves to a network with no route out and reaches out only through the gate, which publishes its port"
	}
	return "the executor's door goes: the executor gets its own network access back and publishes its port itself"
}
