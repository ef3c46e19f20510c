package spec

import "gopkg.in/yaml.v3"

// RulePlaces are where the network rules a box runs under are written in
// boxes.yaml: its own, or those it inherits from its pool or the
// defaults. A message about the entry that decides a request names it.
type RulePlaces struct {
	// Egress is the egress: value; zero when none is written (open).
	Egress Pos
	// Allow is where each destination of Egress.Allow is written, in order.
	Allow []Pos
	// Private is where each destination of Private is written, in order.
	Private []Pos
	// Credentials is where each credential is named, by name.
	Credentials map[string]Pos
}

// RulesAt is where the network rules of b, a box or a pool's box, are
// written; zero places for a box this file does not declare.
func (c *Config) RulesAt(b Box) RulePlaces {
	scope := b.Name
	if b.Pool != "" {
		scope = b.Pool
	}
	if r, ok := c.places[scope]; ok {
		return r
	}
	return RulePlaces{Credentials: map[string]Pos{}}
}

// rulePlaces records where the rules of each box and pool are written.
func (p *parser) rulePlaces(cfg *Config) {
	cfg.places = map[string]RulePlaces{}
	for _, b := range cfg.Boxes {
		cfg.places[b.Name] = p.placesOf(b.Name, b.Settings)
	}
	for _, pool := range cfg.Pools {
		cfg.places[pool.Name] = p.placesOf(pool.Name, pool.Settings)
	}
}

// placesOf are the places of the rules s of scope (a box's or a pool's
// name): its own keys, else the defaults'.
func (p *parser) placesOf(scope string, s Settings) RulePlaces {
	at := func(key string) *yaml.Node {
		if n := p.at[scope][key]; n != nil {
			return n
		}
		return p.at[""][key]
	}
	pos := func(n *yaml.Node) Pos {
		if n == nil {
			return Pos{}
		}
		return Pos{File: p.file, Line: n.Line, Col: n.Column}
	}
	items := func(n *yaml.Node, count int) []Pos {
		out := make([]Pos, count)
		if n != nil && n.Kind == yaml.SequenceNode && len(n.Content) == count {
			for i, item := range n.Content {
				out[i] = pos(item)
			}
		}
		return out
	}
	r := RulePlaces{Egress: pos(at("egress")), Credentials: map[string]Pos{}}
	r.Allow = items(at("egress"), len(s.Egress.Allow))
	r.Private = items(at("private"), len(s.Private))
	for _, c := range s.Credentials {
		r.Credentials[c.Name] = pos(at("credentials." + c.Name))
	}
	return r
}
