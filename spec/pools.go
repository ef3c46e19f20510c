package spec

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Pool is one pool under pools:: Size free boxes kept created and ready,
// each leased to one holder at a time (boxes lease) and reset when its
// lease ends.
type Pool struct {
	Name string
	// Size is how many free boxes apply keeps ready, beside those leased.
	Size int
	Host string // "" is the local engine
	// Settings are the pool's boxes' settings, defaults applied. A pool's
	// boxes publish their executors on ports the engine picks.
	Settings
	// From is the snapshot (BOX@LABEL) each of the pool's boxes is made
	// from, and reset to: the pool's clean state. "" is a box made from
	// the image.
	From string
	// Line is where the pool is declared in boxes.yaml, for messages.
	Line int
}

// MaxPoolSize is the most free boxes a pool keeps ready: a pool's boxes are
// numbered NAME-1 to NAME-999 with those leased.
const MaxPoolSize = 100

// maxPoolBoxes bounds a pool's box numbers, so that NAME-N stays a box name.
const maxPoolBoxes = 999

// poolKeys are what a pool takes: its size, its host, and a box's settings.
var poolKeys = append([]string{"size", "host", "from"}, settingKeys...)

// A pool's name leaves room for "-999" within a box name's 31 characters.
var poolNamePattern = lazyRegexp(`^[a-z][a-z0-9-]{0,26}$`)

// PoolBoxName is the name of box number n of pool pool: scratch-1.
func PoolBoxName(pool string, n int) string { return pool + "-" + strconv.Itoa(n) }

// PoolBoxNumber is n for a box named POOL-n of pool pool, and whether name is one.
func PoolBoxNumber(pool, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, pool+"-")
	if !ok || rest == "" || rest[0] == '0' {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 || n > maxPoolBoxes {
		return 0, false
	}
	return n, true
}

// Pool returns the pool with that name.
func (c *Config) Pool(name string) (Pool, bool) {
	for _, p := range c.Pools {
		if p.Name == name {
			return p, true
		}
	}
	return Pool{}, false
}

// PoolOf is the pool whose boxes' names box name takes, if any.
func (c *Config) PoolOf(name string) (Pool, bool) {
	if c == nil {
		return Pool{}, false
	}
	for _, p := range c.Pools {
		if _, ok := PoolBoxNumber(p.Name, name); ok {
			return p, true
		}
	}
	return Pool{}, false
}

// PoolBox is box name of pool p, with the pool's settings.
func (p Pool) PoolBox(name, fleet string) Box {
	return Box{Name: name, Fleet: fleet, Host: p.Host, State: Running, Settings: p.Settings.clone(), From: p.From, Pool: p.Name, Line: p.Line}
}

// pools reads pools: into cfg, each pool's settings over defaults.
func (p *parser) pools(cfg *Config, n *yaml.Node, defaults Settings) {
	if n.Tag == "!!null" || !p.kind(n, yaml.MappingNode, "a mapping of pool names") {
		return
	}
	for name, e := range p.mapping(n, nil) {
		if pool, ok := p.pool(name, e, defaults, cfg); ok {
			cfg.Pools = append(cfg.Pools, pool)
		}
	}
	sort.Slice(cfg.Pools, func(i, j int) bool { return cfg.Pools[i].Name < cfg.Pools[j].Name })
}

func (p *parser) pool(name string, e entry, defaults Settings, cfg *Config) (Pool, bool) {
	ok := true
	if !poolNamePattern().MatchString(name) {
		p.errorf(e.key, "a pool name is a letter, then up to 26 letters, digits or dashes: its boxes are named NAME-1, NAME-2, …", "bad pool name %q", name)
		return Pool{}, false
	}
	if !p.kind(e.value, yaml.MappingNode, "a mapping with size: and the pool's box settings") {
		return Pool{}, false
	}
	fields := p.mapping(e.value, poolKeys)
	// A pool's boxes take a box's settings, parsed as a box's (which copies
	// the defaults' lists), under the pool's name.
	b, boxOK := p.box(name, entry{key: e.key, value: onlyKeys(e.value, poolKeys[1:]...)}, defaults, nil, cfg)
	ok = ok && boxOK
	pool := Pool{Name: name, Host: b.Host, Settings: b.Settings, From: b.From, Line: e.key.Line}
	f, has := fields["size"]
	switch {
	case !has:
		p.errorf(e.key, "e.g. size: 3, the free boxes kept ready", "pool %s has no size:", name)
		ok = false
	default:
		v, isInt := p.int(f.value)
		switch {
		case !isInt:
			ok = false
		case v < 0 || v > MaxPoolSize:
			p.errorf(f.value, "", "a pool's size is from 0 to %d, not %d", MaxPoolSize, v)
			ok = false
		}
		pool.Size = v
	}
	if pool.Executor.Port != 0 {
		at := p.at[name]["executor.port"]
		if at == nil {
			at = p.at[""]["executor.port"]
		}
		p.errorf(at, "leave a pool's port to the engine (port: auto)", "pool %s's boxes cannot share fixed executor port %d", name, pool.Executor.Port)
		ok = false
	}
	for _, box := range cfg.Boxes {
		if _, taken := PoolBoxNumber(name, box.Name); taken || box.Name == name {
			p.errorf(e.key, "rename the box or the pool", "box %s (line %d) takes a name of pool %s or of its boxes (%s-1, %s-2, …)", box.Name, box.Line, name, name, name)
			ok = false
		}
	}
	return pool, ok
}

// onlyKeys is mapping n with only the entries keyed keys (those it has
// besides are reported once, by the caller).
func onlyKeys(n *yaml.Node, keys ...string) *yaml.Node {
	out := *n
	out.Content = nil
	for i := 0; i+1 < len(n.Content); i += 2 {
		if slices.Contains(keys, n.Content[i].Value) {
			out.Content = append(out.Content, n.Content[i], n.Content[i+1])
		}
	}
	return &out
}

// String is the pool as a plan names it.
func (p Pool) String() string { return fmt.Sprintf("pool %s", p.Name) }
