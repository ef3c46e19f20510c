package compose

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/hermes-box/boxes/gate"
	"github.com/hermes-box/boxes/spec"
)

// The executor's door: when boxes.yaml gives the executor egress:, it
// leaves the box's ordinary network for ExecutorNetwork, which it shares
// with the gate alone and which has no route out, and reaches out only
// through the gate's executor side, under its own rules. The gate
// publishes the executor's port in its place and relays it.

// The settings fields of the executor's door: its rules shape the gate
// alone; ExecutorDoorKey, set when it has one, shapes the executor (its
// networks and its environment).
const (
	ExecutorEgressKey  = "executor.egress"
	ExecutorPrivateKey = "executor.private"
	ExecutorDoorKey    = "executor.door"
	// ExecutorDoorValue is ExecutorDoorKey's value when the executor has a door.
	ExecutorDoorValue = "through the gate"
)

// ExecutorGateURL is the gate's executor-side proxy as the executor's tools
// are told of it.
var ExecutorGateURL = "http://" + ExecutorGate + ":" + strconv.Itoa(gate.ExecutorProxyPort)

// executorNoProxy are the box's own names, which the executor reaches
// directly.
const executorNoProxy = AgentService + "," + ExecutorService + "," + GateService + "," + ExecutorGate + ",localhost,127.0.0.1"

// executorDoor puts the executor's service model s behind the gate: on
// the inside network (where the agent reaches it) and the executor's
// network alone, its tools pointed at the gate's executor side, without
// NET_RAW (no forged packet onto either bridge), and publishing nothing:
// the gate publishes its port.
func executorDoor(s map[string]any) {
	s["networks"] = map[string]any{InsideNetwork: nil, ExecutorNetwork: nil}
	delete(s, "ports")
	s["cap_drop"] = []any{"NET_RAW"}
	env := s["environment"].(map[string]any)
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		env[k] = ExecutorGateURL
	}
	env["NO_PROXY"] = executorNoProxy
	env["no_proxy"] = executorNoProxy
	env["NODE_USE_ENV_PROXY"] = "1"
}

// gateExecutorSide adds to the gate's service model s what the executor's
// door needs of it: the executor's network, where it is also ExecutorGate,
// and the executor's published port.
func gateExecutorSide(s map[string]any, b spec.Box, hostPort int) {
	s["networks"] = map[string]any{
		Network:         nil,
		InsideNetwork:   nil,
		ExecutorNetwork: map[string]any{"aliases": []any{ExecutorGate}},
	}
	s["ports"] = []any{executorPort(b, hostPort)}
}

// executorSide is the gate's executor side for b; nil without a door.
func executorSide(b spec.Box) *gate.Side {
	e := b.Executor
	if !e.Door {
		return nil
	}
	side := &gate.Side{
		Egress: e.Egress.Mode.String(),
		Listen: ExecutorGate,
		Relay:  ExecutorService + ":" + strconv.Itoa(ExecutorPort),
	}
	if e.Egress.Mode == spec.EgressList {
		side.Allow = rules(e.Egress.Allow)
	}
	side.Private = rules(e.Private)
	return side
}

// executorDoorSettings adds the executor's door to a box's settings: its
// rules, and that it has one.
func executorDoorSettings(s map[string]string, b spec.Box) {
	e := b.Executor
	if !e.Door {
		return
	}
	switch e.Egress.Mode {
	case spec.EgressNone:
		s[ExecutorEgressKey] = "none"
	case spec.EgressList:
		s[ExecutorEgressKey] = joinDestinations(e.Egress.Allow)
	default:
		s[ExecutorEgressKey] = "open"
	}
	s[ExecutorPrivateKey] = joinDestinations(e.Private)
	s[ExecutorDoorKey] = ExecutorDoorValue
}

// HasExecutorDoor reports whether a container of a box's executor or gate,
// by its labels, was made with the executor's door.
func HasExecutorDoor(labels map[string]string) bool {
	v := labels[SettingsLabel]
	if !strings.Contains(v, `"executor.`) {
		return false
	}
	s := map[string]string{}
	if json.Unmarshal([]byte(v), &s) != nil {
		return false
	}
	_, door := s[ExecutorDoorKey]
	_, rules := s[ExecutorEgressKey]
	return door || rules
}
