package compose

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/hermes-box/boxes/spec"
)

// SettingsLabel carries the box's declared settings on its containers, so a
// plan can name what changed (old → new) without inspecting anything.
const SettingsLabel = "boxes.settings"

// HostPortLabel records the auto-assigned executor host port a recreate kept.
const HostPortLabel = "boxes.host-port"

// Settings flattens the declared knobs of a box that shape its containers into
// field → value, e.g. "memory" → "4GiB", "env.TZ" → "Europe/Berlin".
func Settings(b spec.Box) map[string]string {
	s := map[string]string{
		"cpus":          "unlimited",
		"memory":        "unlimited",
		"executor.bind": b.Executor.Bind,
		"executor.port": "auto",
		"runtime":       "default",
	}
	if b.CPUs > 0 {
		s["cpus"] = strconv.FormatFloat(b.CPUs, 'f', -1, 64)
	}
	if b.Memory > 0 {
		s["memory"] = FormatSize(b.Memory)
	}
	if b.Executor.Port != 0 {
		s["executor.port"] = strconv.Itoa(b.Executor.Port)
	}
	if b.Runtime != "" {
		s["runtime"] = b.Runtime
	}
	for k, v := range b.Env {
		s["env."+k] = v
	}
	doorSettings(s, b)
	executorDoorSettings(s, b)
	return s
}

// doorSettings adds the gate's fields: egress ("open", "none" or the
// destinations), private, dns and one field per credential.
func doorSettings(s map[string]string, b spec.Box) {
	switch b.Egress.Mode {
	case spec.EgressNone:
		s["egress"] = "none"
	case spec.EgressList:
		s["egress"] = joinDestinations(b.Egress.Allow)
	default:
		s["egress"] = "open"
	}
	s["private"] = joinDestinations(b.Private)
	var dns []string
	for _, a := range b.DNS {
		dns = append(dns, a.String())
	}
	s["dns"] = strings.Join(dns, ", ")
	for _, c := range b.Credentials {
		s["credentials."+c.Name] = fmt.Sprintf("%s to %s from %s", c.Header, c.To, c.From)
		if c.CA != "" {
			s["credentials."+c.Name] += " ca " + c.CA
		}
	}
}

// joinDestinations is a list of destinations as one settings value: their
// canonical forms, sorted, comma-separated.
func joinDestinations(ds []spec.Destination) string {
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		out = append(out, d.String())
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// ServiceSettings are the settings that shape one service's container: the
// agent does not see the executor's port, the executor not the box's env,
// and the gate's rules (the executor's among them) shape the gate alone;
// the gate also publishes the executor's port when the executor has a door.
func ServiceSettings(b spec.Box, service string) map[string]string {
	s := Settings(b)
	for k := range s {
		if service == GateService {
			published := b.Executor.Door && (k == "executor.bind" || k == "executor.port")
			if !IsGateKey(k) && !published {
				delete(s, k)
			}
			continue
		}
		if IsGateKey(k) || (service == AgentService && strings.HasPrefix(k, "executor.")) || (service == ExecutorService && strings.HasPrefix(k, "env.")) {
			delete(s, k)
		}
	}
	return s
}

// SettingsJSON is the SettingsLabel value of a service: compact JSON with sorted keys.
func SettingsJSON(b spec.Box, service string) string {
	out, _ := json.Marshal(ServiceSettings(b, service)) // a map of strings always marshals
	return string(out)
}

// SettingsDiff lists the fields whose values differ between an old label value
// and the desired settings, sorted; a field absent on one side shows as "".
func SettingsDiff(oldLabel string, desired map[string]string) []FieldChange {
	old := map[string]string{}
	if oldLabel != "" {
		_ = json.Unmarshal([]byte(oldLabel), &old) // an unreadable label reads as "nothing known"
	}
	fields := map[string]bool{}
	for k := range old {
		fields[k] = true
	}
	for k := range desired {
		fields[k] = true
	}
	var changes []FieldChange
	for f := range fields {
		if old[f] != desired[f] {
			changes = append(changes, FieldChange{Field: f, Old: old[f], New: desired[f]})
		}
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Field < changes[j].Field })
	return changes
}

// FieldChange is one declared setting that differs from what a container was made with.
type FieldChange struct {
	Field, Old, New string
}

// FormatSize renders bytes in the largest binary unit that divides them exactly
// (4GiB, 512MiB), falling back to bytes.
func FormatSize(n int64) string {
	units := []string{"TiB", "GiB", "MiB", "KiB"}
	for i, u := range units {
		size := int64(1) << (10 * (len(units) - i))
		if n >= size && n%size == 0 {
			return fmt.Sprintf("%d%s", n/size, u)
		}
	}
	return strconv.FormatInt(n, 10)
}
