package spec

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// A box or a pool may be seeded when created from a snapshot of a box
// (from: alpha@before-upgrade) or, for a box, from another box's /data as
// it is then (from: alpha). Both copy on the box's engine: a snapshot never
// leaves it.

// snapshotLabelPattern is what a snapshot label is (boxes snapshot NAME LABEL).
var snapshotLabelPattern = lazyRegexp(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// ValidSnapshotLabel reports whether label can label a snapshot.
func ValidSnapshotLabel(label string) bool { return snapshotLabelPattern().MatchString(label) }

// SplitFrom splits a from: value into the box it names and the snapshot
// label, "" when it names the box's /data as it is.
func SplitFrom(from string) (box, label string) {
	box, label, _ = strings.Cut(from, "@")
	return box, label
}

// fromOf reads box b's from: at n.
func (p *parser) fromOf(b *Box, n *yaml.Node) bool {
	v, ok := p.str(n)
	if !ok {
		return false
	}
	src, label, hasLabel := strings.Cut(v, "@")
	switch {
	case !boxNamePattern().MatchString(src):
		p.errorf(n, "from: is a box's name, and @ with one of its snapshots' labels: from: alpha, or from: alpha@before-upgrade", "from: %q does not name a box", v)
		return false
	case hasLabel && !ValidSnapshotLabel(label):
		p.errorf(n, "a label is 1 to 63 characters of a-z, 0-9, '.', '_' and '-', starting with a letter or a digit", "from: %q: %q is not a snapshot label", v, label)
		return false
	case src == b.Name:
		p.errorf(n, "name another box, or one of this box's snapshots", "box %s cannot be seeded from itself", b.Name)
		return false
	}
	b.From = v
	p.fromAt(b.Name, n)
	return true
}

// fromAt records where box's from: is written.
func (p *parser) fromAt(box string, n *yaml.Node) { p.wrote(box, "from", n) }

// forks checks every from: against the other boxes once all are read: a
// box is seeded from an archive or from a box, not both; a pool's clean
// state is a snapshot, which does not change under it; and a box copied as
// it is must be a box of this file on the same engine, not seeded itself
// (apply seeds forks after every other box, so the box it copies is whole).
func (p *parser) forks(cfg *Config) {
	for _, b := range cfg.Boxes {
		if b.From == "" {
			continue
		}
		at := p.at[b.Name]["from"]
		if b.Restore != "" {
			p.errorf(at, "keep restore: (an archive) or from: (a box or its snapshot)", "box %s is seeded from both an archive (restore:) and a box (from:)", b.Name)
			continue
		}
		src, label := SplitFrom(b.From)
		if label != "" {
			continue
		}
		s, ok := cfg.Box(src)
		switch {
		case !ok:
			p.errorf(at, "declare it under boxes:, or name one of its snapshots (from: "+src+"@LABEL), which outlive it", "box %s is seeded from box %s, which boxes.yaml does not declare", b.Name, src)
		case s.Host != b.Host:
			p.errorf(at, "a fork copies on one engine; to carry a box to another host, save it and load it there (or name a snapshot on this host)", "box %s (on %s) cannot be seeded from box %s (on %s)", b.Name, hostShown(b.Host), src, hostShown(s.Host))
		case s.From != "" || s.Restore != "":
			p.errorf(at, "name a snapshot of "+src+" (from: "+src+"@LABEL) instead", "box %s is seeded from box %s, which is itself seeded when created", b.Name, src)
		}
	}
	for _, pool := range cfg.Pools {
		if pool.From == "" {
			continue
		}
		if _, label := SplitFrom(pool.From); label == "" {
			p.errorf(p.at[pool.Name]["from"], "name a snapshot: from: "+pool.From+"@LABEL (boxes snapshot "+pool.From+" LABEL makes one)", "pool %s's boxes are reset to its clean state, so its from: names a snapshot, which never changes", pool.Name)
		}
	}
}

// fromPattern is the JSON Schema pattern of a from: value; a pool's names
// a snapshot.
func fromPattern(snapshot bool) string {
	box := strings.TrimSuffix(boxNamePattern().String(), "$")
	label := "@" + strings.TrimPrefix(strings.TrimSuffix(snapshotLabelPattern().String(), "$"), "^")
	if snapshot {
		return box + label + "$"
	}
	return box + "(" + label + ")?$"
}

// hostShown names a host as messages do.
func hostShown(host string) string {
	if host == "" {
		return "the local engine"
	}
	return "host " + host
}
