package spec

import (
	"gopkg.in/yaml.v3"
)

// executorScope is the key under which the executor's rules of scope (a
// box's or a pool's name, "" for the defaults) are marked refused in
// badRules: box names hold no '.', so it is no box's name.
func executorScope(scope string) string { return "executor." + scope }

// executorDoor reads the egress: and private: of box's executor: mapping
// (fields ef) into s, as the agent's are read: egress: gives the executor
// its door; private: alone, with no egress: written for the executor here
// or in the defaults, is refused, since without a door nothing closes the
// private ranges to the executor.
func (p *parser) executorDoor(box string, ef map[string]entry, s *Settings) {
	if f, ok := ef["egress"]; ok {
		if e, ok := p.egress(f.value); ok {
			s.Executor.Egress = e
			s.Executor.Door = true
			p.wrote(box, "executor.egress", f.value)
		} else {
			p.unreadRules(executorScope(box))
		}
	}
	if f, ok := ef["private"]; ok {
		if d, ok := p.destinationList("private", f.value); ok {
			s.Executor.Private = d
			p.wrote(box, "executor.private", f.value)
		} else {
			p.unreadRules(executorScope(box))
		}
		if _, written := ef["egress"]; !s.Executor.Door && !written {
			p.errorf(f.key, "write egress: under executor: too (egress: open keeps every public address open and closes the private ranges but these)",
				"executor: private: lists exceptions to the executor's door, which it has only with executor: egress:")
		}
	}
}

// executorOnKubernetes refuses an executor door on a box (or pool, of
// name) whose host is a Kubernetes namespace: the door is built of Docker
// networks there is no counterpart of yet.
func (p *parser) executorOnKubernetes(name string, b Box, cfg *Config, at *yaml.Node) bool {
	if !b.Executor.Door || cfg.Hosts[b.Host].Kind() != HostKubernetes {
		return true
	}
	if n := p.at[name]["executor.egress"]; n != nil {
		at = n
	} else if n := p.at[""]["executor.egress"]; n != nil {
		at = n
	}
	p.errorf(at, "leave executor: egress: out for a box on a kubernetes: host (its executor keeps its own network access)",
		"%s is on kubernetes: host %s, for which the executor's door (executor: egress:) is not built", name, b.Host)
	return false
}
