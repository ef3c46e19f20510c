package compose

import (
	"strings"
	"testing"

	"github.com/hermes-box/boxes/spec"
)

// withExecutorDoor is b with the executor behind the gate under egress.
func withExecutorDoor(b spec.Box, egress spec.Egress, private ...spec.Destination) spec.Box {
	b.Executor.Door = true
	b.Executor.Egress = egress
	b.Executor.Private = private
	return b
}

// The executor's rules shape the gate alone: changing them changes no
// other container's hash or settings, as the agent's rules do not; giving
// the executor its door changes the executor and the gate, never the agent.
func TestExecutorRulesShapeTheGateAlone(t *testing.T) {
	list := spec.Egress{Mode: spec.EgressList, Allow: []spec.Destination{mustDestination("api.github.com")}}
	plain := input(box("alpha"))
	gated := input(withExecutorDoor(box("alpha"), list))
	other := input(withExecutorDoor(box("alpha"), spec.Egress{Mode: spec.EgressNone}, mustDestination("10.0.0.0/8")))
	h := func(in Input) map[string]string { return mustHashes(t, mustProject(t, in)) }
	hp, hg, ho := h(plain), h(gated), h(other)

	if hg[AgentService] != hp[AgentService] {
		t.Error("the executor's door changes the agent's container")
	}
	if hg[ExecutorService] == hp[ExecutorService] || hg[GateService] == hp[GateService] {
		t.Error("the executor's door leaves the executor's or the gate's container as it was")
	}
	if ho[AgentService] != hg[AgentService] || ho[ExecutorService] != hg[ExecutorService] {
		t.Error("a change of the executor's rules alone changes the agent's or the executor's container")
	}
	if ho[GateService] == hg[GateService] {
		t.Error("a change of the executor's rules leaves the gate as it was")
	}

	// Settings: the rules on the gate, the door on the executor.
	s := func(b spec.Box, svc string) map[string]string { return ServiceSettings(b, svc) }
	if g := s(other.Box, GateService); g[ExecutorEgressKey] != "none" || g[ExecutorPrivateKey] != "10.0.0.0/8" || g["executor.bind"] != "127.0.0.1" || g["executor.port"] != "auto" {
		t.Errorf("gate settings %v", g)
	}
	if e := s(other.Box, ExecutorService); e[ExecutorDoorKey] != ExecutorDoorValue || e[ExecutorEgressKey] != "" || e[ExecutorPrivateKey] != "" {
		t.Errorf("executor settings %v", e)
	}
	for _, svc := range []string{ExecutorService, GateService} {
		if _, ok := s(plain.Box, svc)[ExecutorDoorKey]; ok {
			t.Errorf("%s of a box without the executor's door: %v", svc, s(plain.Box, svc))
		}
		if _, ok := s(plain.Box, svc)[ExecutorEgressKey]; ok {
			t.Errorf("%s of a box without the executor's door: %v", svc, s(plain.Box, svc))
		}
	}
	if g := s(plain.Box, GateService); g["executor.port"] != "" || g["executor.bind"] != "" {
		t.Errorf("the gate of a box without the executor's door records its port: %v", g)
	}
	if a := s(gated.Box, AgentService); len(a) != len(s(plain.Box, AgentService)) {
		t.Errorf("agent settings %v", a)
	}
	for k, want := range map[string]bool{ExecutorEgressKey: true, ExecutorPrivateKey: true, ExecutorDoorKey: false, "executor.port": false} {
		if IsGateKey(k) != want {
			t.Errorf("IsGateKey(%s) = %v", k, !want)
		}
	}
	if HasExecutorDoor(map[string]string{SettingsLabel: SettingsJSON(plain.Box, GateService)}) || HasExecutorDoor(map[string]string{SettingsLabel: "{not json"}) || HasExecutorDoor(nil) {
		t.Error("HasExecutorDoor of a container without the door")
	}
}

func TestServiceNetworks(t *testing.T) {
	for _, tc := range []struct {
		door    bool
		service string
		want    string
	}{
		{false, AgentService, "hbl-a_inside"},
		{false, ExecutorService, "hbl-a_default hbl-a_inside"},
		{false, GateService, "hbl-a_default hbl-a_inside"},
		{true, AgentService, "hbl-a_inside"},
		{true, ExecutorService, "hbl-a_exec hbl-a_inside"},
		{true, GateService, "hbl-a_default hbl-a_exec hbl-a_inside"},
	} {
		got := ServiceNetworks("a", tc.door, tc.service)
		if s := strings.Join(got, " "); s != tc.want {
			t.Errorf("ServiceNetworks(a, %v, %s) = %s, want %s", tc.door, tc.service, s, tc.want)
		}
	}
	if s := strings.Join(NetworkNames("a", true), " "); s != "hbl-a_default hbl-a_inside hbl-a_exec" {
		t.Errorf("NetworkNames(a, true) = %s", s)
	}
	b := box("a")
	if PortService(b) != ExecutorService || PortService(withExecutorDoor(b, spec.Egress{})) != GateService {
		t.Error("PortService")
	}
}
